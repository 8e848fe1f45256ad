import { MigrationInterface, QueryRunner } from 'typeorm';

export class HubIdentity1796100000004 implements MigrationInterface {
  name = 'HubIdentity1796100000004';

  // One row: the hub's tag, made once with its database. Every team API token this hub makes starts
  // with it, so a token made by another hub is refused as such (not as a mistyped or unknown one).
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'CREATE TABLE "hub_identity" ("singleton" boolean PRIMARY KEY DEFAULT true CHECK ("singleton"), "tag" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now())',
    );
    await queryRunner.query(
      `INSERT INTO "hub_identity" ("tag") VALUES (substr(md5(random()::text || clock_timestamp()::text), 1, 4))`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE "hub_identity"');
  }
}
