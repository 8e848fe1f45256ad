import { MigrationInterface, QueryRunner } from 'typeorm';

export class TeamWebhooks1796042501049 implements MigrationInterface {
  name = 'TeamWebhooks1796042501049';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'CREATE TABLE "team_webhooks" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "team_id" uuid NOT NULL, "url" text NOT NULL, "secret" text NOT NULL, "events" text array NOT NULL, "created_by" uuid NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "deleted_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "PK_79b26eb2e6f7dc38e780f7c574e" PRIMARY KEY ("id"))',
    );
    await queryRunner.query('CREATE INDEX "IDX_team_webhooks_team" ON "team_webhooks" ("team_id") ');
    await queryRunner.query(
      'CREATE TABLE "webhook_deliveries" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "webhook_id" uuid NOT NULL, "team_id" uuid NOT NULL, "event" text NOT NULL, "run_id" uuid, "body" text NOT NULL, "status" text NOT NULL DEFAULT \'pending\', "attempts" integer NOT NULL DEFAULT \'0\', "last_status_code" integer, "last_error" text, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "delivered_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "PK_535dd409947fb6d8fc6dfc0112a" PRIMARY KEY ("id"))',
    );
    await queryRunner.query(
      'CREATE INDEX "IDX_webhook_deliveries_hook" ON "webhook_deliveries" ("webhook_id", "created_at") ',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX "public"."IDX_webhook_deliveries_hook"');
    await queryRunner.query('DROP TABLE "webhook_deliveries"');
    await queryRunner.query('DROP INDEX "public"."IDX_team_webhooks_team"');
    await queryRunner.query('DROP TABLE "team_webhooks"');
  }
}
