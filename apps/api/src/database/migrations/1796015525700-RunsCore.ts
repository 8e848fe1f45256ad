import { MigrationInterface, QueryRunner } from 'typeorm';

export class RunsCore1796015525700 implements MigrationInterface {
  name = 'RunsCore1796015525700';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'CREATE TABLE "submissions" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "benchmark_id" text NOT NULL, "team_id" uuid NOT NULL, "created_by" uuid NOT NULL, "source" text NOT NULL, "source_name" text NOT NULL, "number" integer NOT NULL, "kind" text NOT NULL, "sha256" text NOT NULL, "size_bytes" integer NOT NULL, "file_count" integer NOT NULL, "files" jsonb NOT NULL, "commit_sha" text, "repository_id" uuid, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "UQ_submission_team_source_number" UNIQUE ("team_id", "source_name", "number"), CONSTRAINT "PK_10b3be95b8b2fb1e482e07d706b" PRIMARY KEY ("id"))',
    );
    await queryRunner.query(
      'CREATE INDEX "IDX_submissions_team_created" ON "submissions" ("team_id", "created_at") ',
    );
    await queryRunner.query(
      'CREATE TABLE "runs" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "submission_id" uuid NOT NULL, "benchmark_id" text NOT NULL, "team_id" uuid NOT NULL, "created_by" uuid NOT NULL, "mode" text NOT NULL, "tier" text, "dataset" text, "status" text NOT NULL, "failure_code" text, "message" text, "detail" text, "cancel_reason" text, "score" double precision, "rules_version" integer NOT NULL, "invalidated" boolean NOT NULL DEFAULT false, "invalidated_reason" text, "agent_id" uuid, "agent_name" text, "slot" integer, "lease_expires_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "assigned_at" TIMESTAMP WITH TIME ZONE, "started_at" TIMESTAMP WITH TIME ZONE, "finished_at" TIMESTAMP WITH TIME ZONE, "run_time_limit_seconds" integer NOT NULL, "deadline_at" TIMESTAMP WITH TIME ZONE, "last_batch_seq" integer NOT NULL DEFAULT \'0\', "last_log_seq" integer NOT NULL DEFAULT \'0\', "workloads" jsonb, "metrics" jsonb, "spec" jsonb NOT NULL, "quota_bucket" text NOT NULL, "quota_day" date NOT NULL, "quota_holder" text NOT NULL, "quota_refunded" boolean NOT NULL DEFAULT false, "download_token_hash" text, CONSTRAINT "PK_46d6a1e257c38ba58f1a3c30836" PRIMARY KEY ("id"))',
    );
    await queryRunner.query(
      'CREATE INDEX "IDX_runs_benchmark_board" ON "runs" ("benchmark_id", "mode", "status") ',
    );
    await queryRunner.query('CREATE INDEX "IDX_runs_team_created" ON "runs" ("team_id", "created_at") ');
    await queryRunner.query('CREATE INDEX "IDX_runs_status_created" ON "runs" ("status", "created_at") ');
    await queryRunner.query(
      'CREATE TABLE "run_logs" ("run_id" uuid NOT NULL, "seq" integer NOT NULL, "ts" bigint NOT NULL, "stream" text NOT NULL, "text" text NOT NULL, CONSTRAINT "PK_bff9e19bc7e2beeb373df36500d" PRIMARY KEY ("run_id", "seq"))',
    );
    await queryRunner.query(
      'CREATE TABLE "run_samples" ("run_id" uuid NOT NULL, "workload" text NOT NULL, "warmup" boolean NOT NULL, "idx" integer NOT NULL, "ttft_ms" double precision, "tpot_ms" double precision, "tps" double precision, "total_ms" double precision NOT NULL, "tokens" integer NOT NULL, "metrics" jsonb, CONSTRAINT "PK_7a7b3cdac6c72c89e191112da65" PRIMARY KEY ("run_id", "workload", "warmup", "idx"))',
    );
    await queryRunner.query(
      'CREATE TABLE "run_checks" ("run_id" uuid NOT NULL, "name" text NOT NULL, "passed" boolean NOT NULL, "detail" text NOT NULL, CONSTRAINT "PK_2e9add0f4bcf452000f3a34adce" PRIMARY KEY ("run_id", "name"))',
    );
    await queryRunner.query(
      'CREATE TABLE "run_metrics" ("run_id" uuid NOT NULL, "name" text NOT NULL, "step" integer NOT NULL, "value" double precision NOT NULL, "elapsed_ms" double precision NOT NULL, CONSTRAINT "PK_1362db4a46b85f9bcc15a537c14" PRIMARY KEY ("run_id", "name", "step"))',
    );
    await queryRunner.query(
      'CREATE TABLE "idempotency_keys" ("team_id" uuid NOT NULL, "key" text NOT NULL, "request_hash" text NOT NULL, "state" text NOT NULL, "response_status" integer, "response_body" jsonb, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_761ce71e3aa89d8a94544002d3c" PRIMARY KEY ("team_id", "key"))',
    );
    await queryRunner.query(
      'CREATE TABLE "baselines" ("benchmark_id" text NOT NULL, "hardware" text NOT NULL, "rules_version" integer NOT NULL, "figures" jsonb NOT NULL, "measured_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_2f3b77ca1494d82ac9a335946c0" PRIMARY KEY ("benchmark_id", "hardware", "rules_version"))',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE "baselines"');
    await queryRunner.query('DROP TABLE "idempotency_keys"');
    await queryRunner.query('DROP TABLE "run_metrics"');
    await queryRunner.query('DROP TABLE "run_checks"');
    await queryRunner.query('DROP TABLE "run_samples"');
    await queryRunner.query('DROP TABLE "run_logs"');
    await queryRunner.query('DROP INDEX "public"."IDX_runs_status_created"');
    await queryRunner.query('DROP INDEX "public"."IDX_runs_team_created"');
    await queryRunner.query('DROP INDEX "public"."IDX_runs_benchmark_board"');
    await queryRunner.query('DROP TABLE "runs"');
    await queryRunner.query('DROP INDEX "public"."IDX_submissions_team_created"');
    await queryRunner.query('DROP TABLE "submissions"');
  }
}
