import { MigrationInterface, QueryRunner } from 'typeorm';

export class Calibration1796174025904 implements MigrationInterface {
  name = 'Calibration1796174025904';

  // Issue 29: calibration of K. Runs of mode 'calibration' have no submission and no team (like
  // 'baseline'), one unfinished run per part, benchmark and hardware key; each one that succeeds
  // leaves its ratios in calibration_runs, pooled per (benchmark, key, rules version) in
  // calibrations. Official results keep their absolute interval, scoring basis and prompt nonce.
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'CREATE TABLE "calibration_runs" ("run_id" uuid NOT NULL, "benchmark_id" text NOT NULL, "rules_version" integer NOT NULL, "hardware" text NOT NULL, "agent_name" text, "workloads" jsonb NOT NULL, "pairs" integer NOT NULL, "seconds" double precision NOT NULL, "half_width_pct" double precision NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_9d5438e6685cf6a941d2399a8fc" PRIMARY KEY ("run_id"))',
    );
    await queryRunner.query(
      'CREATE INDEX "IDX_calibration_runs_key" ON "calibration_runs" ("benchmark_id", "rules_version", "hardware") ',
    );
    await queryRunner.query(
      'CREATE TABLE "calibrations" ("benchmark_id" text NOT NULL, "hardware" text NOT NULL, "rules_version" integer NOT NULL, "k" jsonb NOT NULL, "detail" jsonb NOT NULL, "seconds" double precision NOT NULL, "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_cfd2dd313d332e2086b6ec0a0d9" PRIMARY KEY ("benchmark_id", "hardware", "rules_version"))',
    );
    await queryRunner.query('ALTER TABLE "runs" ADD "calibration_part" integer');
    await queryRunner.query('ALTER TABLE "runs" ADD "absolute_interval" jsonb');
    await queryRunner.query('ALTER TABLE "runs" ADD "scoring" jsonb');
    await queryRunner.query('ALTER TABLE "runs" ADD "prompt_nonce" text');
    await queryRunner.query(
      'CREATE UNIQUE INDEX "IDX_runs_one_calibration_part" ON "runs" ("benchmark_id", "hardware", "calibration_part") WHERE mode = \'calibration\' AND status IN (\'queued\', \'assigned\', \'running\')',
    );
    await queryRunner.query('ALTER TABLE "runs" DROP CONSTRAINT "CHK_runs_owner"');
    await queryRunner.query(
      'ALTER TABLE "runs" ADD CONSTRAINT "CHK_runs_owner" CHECK (mode IN (\'baseline\', \'calibration\') OR (submission_id IS NOT NULL AND team_id IS NOT NULL))',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DELETE FROM "runs" WHERE mode = \'calibration\'');
    await queryRunner.query('ALTER TABLE "runs" DROP CONSTRAINT "CHK_runs_owner"');
    await queryRunner.query(
      'ALTER TABLE "runs" ADD CONSTRAINT "CHK_runs_owner" CHECK (mode = \'baseline\' OR (submission_id IS NOT NULL AND team_id IS NOT NULL))',
    );
    await queryRunner.query('DROP INDEX "public"."IDX_runs_one_calibration_part"');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "prompt_nonce"');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "scoring"');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "absolute_interval"');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "calibration_part"');
    await queryRunner.query('DROP TABLE "calibrations"');
    await queryRunner.query('DROP INDEX "public"."IDX_calibration_runs_key"');
    await queryRunner.query('DROP TABLE "calibration_runs"');
  }
}
