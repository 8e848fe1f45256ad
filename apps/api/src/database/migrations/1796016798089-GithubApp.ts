import { MigrationInterface, QueryRunner } from 'typeorm';

export class GithubApp1796016798089 implements MigrationInterface {
  name = 'GithubApp1796016798089';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'CREATE TABLE "github_installations" ("installation_id" bigint NOT NULL, "team_id" uuid NOT NULL, "account_login" text NOT NULL, "account_type" text NOT NULL, "installed_by" uuid NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_d8cf6fe9f15e1d47483d42f8bc9" PRIMARY KEY ("installation_id"))',
    );
    await queryRunner.query(
      'CREATE INDEX "IDX_github_installations_team" ON "github_installations" ("team_id") ',
    );
    await queryRunner.query(
      'CREATE TABLE "github_install_states" ("state_hash" text NOT NULL, "team_id" uuid NOT NULL, "user_id" uuid NOT NULL, "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, "used_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_e09c9c09039aa19c2082a222cd2" PRIMARY KEY ("state_hash"))',
    );
    await queryRunner.query(
      'CREATE TABLE "repository_connections" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "team_id" uuid NOT NULL, "installation_id" bigint NOT NULL, "github_repository_id" bigint NOT NULL, "full_name" text NOT NULL, "default_branch" text NOT NULL, "engine_folder" text NOT NULL, "benchmark_id" text NOT NULL, "auto_run" boolean NOT NULL DEFAULT true, "evaluation" text NOT NULL DEFAULT \'public\', "connected_by" uuid NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_5e1c6e2cd7651984225ec50b27c" PRIMARY KEY ("id"))',
    );
    await queryRunner.query(
      'CREATE INDEX "IDX_repository_connections_installation" ON "repository_connections" ("installation_id") ',
    );
    await queryRunner.query(
      'CREATE UNIQUE INDEX "UQ_repository_connections_repo" ON "repository_connections" ("github_repository_id") ',
    );
    await queryRunner.query(
      'CREATE INDEX "IDX_repository_connections_team" ON "repository_connections" ("team_id", "created_at") ',
    );
    await queryRunner.query(
      'CREATE TABLE "github_deliveries" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "guid" text, "github_delivery_id" text, "event" text NOT NULL, "action" text, "status" text NOT NULL, "reason" text, "failure_code" text, "team_id" uuid, "connection_id" uuid, "installation_id" bigint, "github_repository_id" bigint, "repository_full_name" text, "ref" text, "commit_sha" text, "requested_by" uuid, "submission_id" uuid, "run_id" uuid, "attempts" integer NOT NULL DEFAULT \'0\', "payload" jsonb, "received_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "processed_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "PK_954df7f5e219d2a2736cb258264" PRIMARY KEY ("id"))',
    );
    await queryRunner.query(
      'CREATE UNIQUE INDEX "UQ_github_deliveries_guid" ON "github_deliveries" ("guid") ',
    );
    await queryRunner.query(
      'CREATE INDEX "IDX_github_deliveries_connection" ON "github_deliveries" ("connection_id", "received_at") ',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX "public"."IDX_github_deliveries_connection"');
    await queryRunner.query('DROP INDEX "public"."UQ_github_deliveries_guid"');
    await queryRunner.query('DROP TABLE "github_deliveries"');
    await queryRunner.query('DROP INDEX "public"."IDX_repository_connections_team"');
    await queryRunner.query('DROP INDEX "public"."UQ_repository_connections_repo"');
    await queryRunner.query('DROP INDEX "public"."IDX_repository_connections_installation"');
    await queryRunner.query('DROP TABLE "repository_connections"');
    await queryRunner.query('DROP TABLE "github_install_states"');
    await queryRunner.query('DROP INDEX "public"."IDX_github_installations_team"');
    await queryRunner.query('DROP TABLE "github_installations"');
  }
}
