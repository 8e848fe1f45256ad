import { MigrationInterface, QueryRunner } from 'typeorm';

export class RoundClock1796042132522 implements MigrationInterface {
  name = 'RoundClock1796042132522';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'CREATE TABLE "round_clocks" ("benchmark_id" text NOT NULL, "name" text NOT NULL, "starts_at" TIMESTAMP WITH TIME ZONE NOT NULL, "ends_at" TIMESTAMP WITH TIME ZONE NOT NULL, "updated_by" uuid NOT NULL, "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_d5a882561b7bcc9b570838a986d" PRIMARY KEY ("benchmark_id"))',
    );
    await queryRunner.query(
      'CREATE TABLE "scheduled_actions" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "benchmark_id" text NOT NULL, "action" text NOT NULL, "target" text NOT NULL, "run_at" TIMESTAMP WITH TIME ZONE NOT NULL, "reason" text, "created_by" uuid NOT NULL, "created_by_login" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "status" text NOT NULL DEFAULT \'pending\', "finished_at" TIMESTAMP WITH TIME ZONE, "outcome" text, CONSTRAINT "PK_d0b3ee369a10cd20677346d0b65" PRIMARY KEY ("id"))',
    );
    await queryRunner.query(
      'CREATE INDEX "IDX_scheduled_actions_due" ON "scheduled_actions" ("status", "run_at") ',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX "public"."IDX_scheduled_actions_due"');
    await queryRunner.query('DROP TABLE "scheduled_actions"');
    await queryRunner.query('DROP TABLE "round_clocks"');
  }
}
