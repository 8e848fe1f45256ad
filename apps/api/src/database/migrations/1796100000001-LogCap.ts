import { MigrationInterface, QueryRunner } from 'typeorm';

export class LogCap1796100000001 implements MigrationInterface {
  name = 'LogCap1796100000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "runs" ADD "log_lines" integer NOT NULL DEFAULT \'0\'');
    await queryRunner.query('ALTER TABLE "runs" ADD "log_bytes" bigint NOT NULL DEFAULT \'0\'');
    await queryRunner.query('ALTER TABLE "runs" ADD "log_tail" jsonb');
    // What runs stored before the cap, so the organizers' storage figures include them.
    await queryRunner.query(
      'UPDATE "runs" r SET "log_lines" = l.n, "log_bytes" = l.b FROM (SELECT run_id, count(*) AS n, sum(octet_length(text)) AS b FROM run_logs GROUP BY run_id) l WHERE l.run_id = r.id',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "log_tail"');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "log_bytes"');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "log_lines"');
  }
}
