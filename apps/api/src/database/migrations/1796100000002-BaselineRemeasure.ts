import { MigrationInterface, QueryRunner } from 'typeorm';

export class BaselineRemeasure1796100000002 implements MigrationInterface {
  name = 'BaselineRemeasure1796100000002';

  // Baseline re-measures (mode 'baseline'): runs with no submission and no team, aimed at one
  // hardware key, at most one unfinished per benchmark and key.
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "runs" ADD "hardware" text');
    await queryRunner.query('ALTER TABLE "runs" ALTER COLUMN "submission_id" DROP NOT NULL');
    await queryRunner.query('ALTER TABLE "runs" ALTER COLUMN "team_id" DROP NOT NULL');
    await queryRunner.query(
      'CREATE UNIQUE INDEX "IDX_runs_one_remeasure" ON "runs" ("benchmark_id", "hardware") WHERE mode = \'baseline\' AND status IN (\'queued\', \'assigned\', \'running\')',
    );
    await queryRunner.query(
      'ALTER TABLE "runs" ADD CONSTRAINT "CHK_runs_owner" CHECK (mode = \'baseline\' OR (submission_id IS NOT NULL AND team_id IS NOT NULL))',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "runs" DROP CONSTRAINT "CHK_runs_owner"');
    await queryRunner.query('DROP INDEX "public"."IDX_runs_one_remeasure"');
    await queryRunner.query('ALTER TABLE "runs" ALTER COLUMN "team_id" SET NOT NULL');
    await queryRunner.query('ALTER TABLE "runs" ALTER COLUMN "submission_id" SET NOT NULL');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "hardware"');
  }
}
