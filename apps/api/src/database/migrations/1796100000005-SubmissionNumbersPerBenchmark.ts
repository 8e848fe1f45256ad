import { MigrationInterface, QueryRunner } from 'typeorm';

export class SubmissionNumbersPerBenchmark1796100000005 implements MigrationInterface {
  name = 'SubmissionNumbersPerBenchmark1796100000005';

  // Submission numbers ("fast-qwen #7") count per benchmark: a team's first submission.py on the
  // CPU practice benchmark is #1 even after uploads to deep-recurrence. Existing numbers stay.
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "submissions" DROP CONSTRAINT "UQ_submission_team_source_number"');
    await queryRunner.query(
      'ALTER TABLE "submissions" ADD CONSTRAINT "UQ_submission_team_benchmark_source_number" UNIQUE ("team_id", "benchmark_id", "source_name", "number")',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // Numbers that now repeat across benchmarks are renumbered after the highest of their name.
    await queryRunner.query(
      'ALTER TABLE "submissions" DROP CONSTRAINT "UQ_submission_team_benchmark_source_number"',
    );
    await queryRunner.query(`
      UPDATE submissions s SET number = r.n FROM (
        SELECT id, ROW_NUMBER() OVER (PARTITION BY team_id, source_name ORDER BY created_at, id) AS n FROM submissions
      ) r WHERE r.id = s.id AND s.number <> r.n`);
    await queryRunner.query(
      'ALTER TABLE "submissions" ADD CONSTRAINT "UQ_submission_team_source_number" UNIQUE ("team_id", "source_name", "number")',
    );
  }
}
