import { MigrationInterface, QueryRunner } from 'typeorm';

export class Foundation1796015261736 implements MigrationInterface {
  name = 'Foundation1796015261736';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'CREATE TABLE "sessions" ("id_hash" text NOT NULL, "user_id" uuid NOT NULL, "active_team_id" uuid, "csrf_token" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_5dda86a77da1e1e37e690a45996" PRIMARY KEY ("id_hash"))',
    );
    await queryRunner.query('CREATE INDEX "IDX_085d540d9f418cfbdc7bd55bb1" ON "sessions" ("user_id") ');
    await queryRunner.query(
      'CREATE TABLE "benchmark_settings" ("benchmark_id" text NOT NULL, "submissions_open" boolean NOT NULL, "evaluations_open" boolean NOT NULL, "run_time_limit_seconds" integer NOT NULL, "rules_version" integer NOT NULL, "rules_changed_reason" text, "announcement" text, "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_682a4cd2a26ba9487ee5cf5bf35" PRIMARY KEY ("benchmark_id"))',
    );
    await queryRunner.query(
      'CREATE TABLE "memberships" ("team_id" uuid NOT NULL, "user_id" uuid NOT NULL, "role" text NOT NULL, "joined_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_d555e1e7b060aeefc7f9fb8b893" PRIMARY KEY ("team_id", "user_id"))',
    );
    await queryRunner.query('CREATE INDEX "IDX_7c1e2fdfed4f6838e0c05ae505" ON "memberships" ("user_id") ');
    await queryRunner.query(
      'CREATE TABLE "teams" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "name" text NOT NULL, "slug" text NOT NULL, "invite_code" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "UQ_de8536da4945fe980f4a61900d3" UNIQUE ("slug"), CONSTRAINT "UQ_8ad3974a1c9c97a4c2fcf36d952" UNIQUE ("invite_code"), CONSTRAINT "PK_7e5523774a38b08a6236d322403" PRIMARY KEY ("id"))',
    );
    await queryRunner.query(
      'CREATE TABLE "api_tokens" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "team_id" uuid NOT NULL, "name" text NOT NULL, "token_hash" text NOT NULL, "prefix" text NOT NULL, "created_by" uuid NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "last_used_at" TIMESTAMP WITH TIME ZONE, "expires_at" TIMESTAMP WITH TIME ZONE, "revoked_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "UQ_bbd687a104e1921e6702c6e3aad" UNIQUE ("token_hash"), CONSTRAINT "PK_c587455266b5fa8dace7194caac" PRIMARY KEY ("id"))',
    );
    await queryRunner.query('CREATE INDEX "IDX_6646e16ec3da6db305c6b10af0" ON "api_tokens" ("team_id") ');
    await queryRunner.query(
      'CREATE TABLE "users" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "github_id" bigint, "login" text NOT NULL, "name" text, "avatar_url" text, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "UQ_09a2296ade1053a0cc4080bda4a" UNIQUE ("github_id"), CONSTRAINT "UQ_2d443082eccd5198f95f2a36e2c" UNIQUE ("login"), CONSTRAINT "PK_a3ffb1c0c8416b9fc6f907b7433" PRIMARY KEY ("id"))',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE "users"');
    await queryRunner.query('DROP INDEX "public"."IDX_6646e16ec3da6db305c6b10af0"');
    await queryRunner.query('DROP TABLE "api_tokens"');
    await queryRunner.query('DROP TABLE "teams"');
    await queryRunner.query('DROP INDEX "public"."IDX_7c1e2fdfed4f6838e0c05ae505"');
    await queryRunner.query('DROP TABLE "memberships"');
    await queryRunner.query('DROP TABLE "benchmark_settings"');
    await queryRunner.query('DROP INDEX "public"."IDX_085d540d9f418cfbdc7bd55bb1"');
    await queryRunner.query('DROP TABLE "sessions"');
  }
}
