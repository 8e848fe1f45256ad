import { MigrationInterface, QueryRunner } from 'typeorm';

export class TokenRevokedReason1796100000030 implements MigrationInterface {
  name = 'TokenRevokedReason1796100000030';

  // Why a token was revoked: null (by an owner or admin) or 'creator_left' (its creator left or was
  // removed from the team: revoked then, so it stays revoked if they rejoin). Tokens whose creator
  // already left are revoked now, for the same reason.
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "api_tokens" ADD "revoked_reason" text');
    await queryRunner.query(
      `UPDATE "api_tokens" t SET "revoked_at" = now(), "revoked_reason" = 'creator_left'
       WHERE t."revoked_at" IS NULL
         AND NOT EXISTS (SELECT 1 FROM "memberships" m WHERE m."team_id" = t."team_id" AND m."user_id" = t."created_by")`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "api_tokens" DROP COLUMN "revoked_reason"');
  }
}
