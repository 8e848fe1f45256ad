import { MigrationInterface, QueryRunner } from 'typeorm';

export class LogChunks1796100000003 implements MigrationInterface {
  name = 'LogChunks1796100000003';

  // A run's log as chunks, one row per stored batch with its lines as JSON (runs/log-chunk.ts),
  // instead of a row per line. Chunks never overlap: the last seq orders them and is the key (a
  // resent batch's chunk is the same key and is not stored twice). Lines already stored move
  // over in chunks of up to 1,000.
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'CREATE TABLE "run_log_chunks" ("run_id" uuid NOT NULL, "last_seq" integer NOT NULL, "first_seq" integer NOT NULL, "line_count" integer NOT NULL, "lines" text NOT NULL, CONSTRAINT "PK_run_log_chunks" PRIMARY KEY ("run_id", "last_seq"))',
    );
    await queryRunner.query(
      `INSERT INTO "run_log_chunks" ("run_id", "last_seq", "first_seq", "line_count", "lines")
       SELECT run_id, max(seq), min(seq), count(*), json_agg(json_build_array(seq, ts, stream, text) ORDER BY seq)::text
       FROM "run_logs" GROUP BY run_id, seq / 1000`,
    );
    await queryRunner.query('DROP TABLE "run_logs"');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'CREATE TABLE "run_logs" ("run_id" uuid NOT NULL, "seq" integer NOT NULL, "ts" bigint NOT NULL, "stream" text NOT NULL, "text" text NOT NULL, CONSTRAINT "PK_bff9e19bc7e2beeb373df36500d" PRIMARY KEY ("run_id", "seq"))',
    );
    await queryRunner.query(
      `INSERT INTO "run_logs" ("run_id", "seq", "ts", "stream", "text")
       SELECT c.run_id, (l ->> 0)::int, (l ->> 1)::bigint, l ->> 2, l ->> 3
       FROM "run_log_chunks" c, json_array_elements(c.lines::json) l`,
    );
    await queryRunner.query('DROP TABLE "run_log_chunks"');
  }
}
