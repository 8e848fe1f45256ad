import { MigrationInterface, QueryRunner } from 'typeorm';

export class QuotaGrants1796187771515 implements MigrationInterface {
  name = 'QuotaGrants1796187771515';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'CREATE TABLE "quota_grants" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "benchmark_id" text NOT NULL, "holder_id" text NOT NULL, "holder_kind" text NOT NULL, "bucket" text NOT NULL, "day" date NOT NULL, "extra_runs" integer NOT NULL, "reason" text NOT NULL, "granted_by" uuid NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_643cca97c20d2121daeb279ec61" PRIMARY KEY ("id"))',
    );
    await queryRunner.query(
      'CREATE INDEX "IDX_quota_grants_holder_day" ON "quota_grants" ("benchmark_id", "holder_id", "bucket", "day") ',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX "public"."IDX_quota_grants_holder_day"');
    await queryRunner.query('DROP TABLE "quota_grants"');
  }
}
