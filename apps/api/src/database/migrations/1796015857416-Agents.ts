import { MigrationInterface, QueryRunner } from 'typeorm';

export class Agents1796015857416 implements MigrationInterface {
  name = 'Agents1796015857416';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'CREATE TABLE "agents" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "name" text NOT NULL, "token_hash" text NOT NULL, "token_prefix" text NOT NULL, "capabilities" jsonb, "slots" jsonb NOT NULL DEFAULT \'[]\', "draining" boolean NOT NULL DEFAULT false, "connected" boolean NOT NULL DEFAULT false, "last_heartbeat_at" TIMESTAMP WITH TIME ZONE, "created_by" uuid, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "revoked_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "PK_9c653f28ae19c5884d5baf6a1d9" PRIMARY KEY ("id"))',
    );
    await queryRunner.query('CREATE UNIQUE INDEX "UQ_agents_token_hash" ON "agents" ("token_hash") ');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX "public"."UQ_agents_token_hash"');
    await queryRunner.query('DROP TABLE "agents"');
  }
}
