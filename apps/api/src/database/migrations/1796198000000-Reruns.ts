import { MigrationInterface, QueryRunner } from 'typeorm';

export class Reruns1796198000000 implements MigrationInterface {
  name = 'Reruns1796198000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'CREATE TABLE "rerun_batches" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "benchmark_id" text NOT NULL, "kind" text NOT NULL, "reason" text NOT NULL, "created_by" uuid NOT NULL, "created_by_login" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "rules_version" integer NOT NULL, "replay_prompts" boolean NOT NULL DEFAULT false, "top_k" integer, "reruns_per_run" integer, "published_at" TIMESTAMP WITH TIME ZONE, "published_by_login" text, CONSTRAINT "PK_292900d4c1ab569306e98ce38ba" PRIMARY KEY ("id"))',
    );
    await queryRunner.query(
      'CREATE INDEX "IDX_rerun_batches_benchmark_created" ON "rerun_batches" ("benchmark_id", "created_at") ',
    );
    await queryRunner.query(
      'CREATE UNIQUE INDEX "IDX_rerun_batches_one_final" ON "rerun_batches" ("benchmark_id", "rules_version") WHERE kind = \'final\'',
    );
    await queryRunner.query(
      'CREATE TABLE "final_boards" ("benchmark_id" text NOT NULL, "board" jsonb NOT NULL, "batch_id" uuid NOT NULL, "published_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_283150fa5d983d3591942f17ad4" PRIMARY KEY ("benchmark_id"))',
    );
    await queryRunner.query('ALTER TABLE "runs" ADD "rerun_of" uuid');
    await queryRunner.query('ALTER TABLE "runs" ADD "rerun_batch_id" uuid');
    await queryRunner.query('CREATE INDEX "IDX_runs_rerun_batch" ON "runs" ("rerun_batch_id") ');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX "public"."IDX_runs_rerun_batch"');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "rerun_batch_id"');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "rerun_of"');
    await queryRunner.query('DROP TABLE "final_boards"');
    await queryRunner.query('DROP INDEX "public"."IDX_rerun_batches_one_final"');
    await queryRunner.query('DROP INDEX "public"."IDX_rerun_batches_benchmark_created"');
    await queryRunner.query('DROP TABLE "rerun_batches"');
  }
}
