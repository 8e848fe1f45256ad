import { MigrationInterface, QueryRunner } from 'typeorm';

export class OrganizerConsole1796041358443 implements MigrationInterface {
  name = 'OrganizerConsole1796041358443';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'CREATE TABLE "audit_log" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "actor_id" uuid NOT NULL, "actor_login" text NOT NULL, "action" text NOT NULL, "target_kind" text NOT NULL, "target_id" text NOT NULL, "benchmark_id" text, "reason" text, "details" jsonb NOT NULL DEFAULT \'{}\', CONSTRAINT "PK_07fefa57f7f5ab8fc3f52b3ed0b" PRIMARY KEY ("id"))',
    );
    await queryRunner.query('CREATE INDEX "IDX_audit_log_at" ON "audit_log" ("at") ');
    await queryRunner.query(
      'CREATE TABLE "bans" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "user_id" uuid, "team_id" uuid, "benchmark_id" text, "reason" text NOT NULL, "ends_at" TIMESTAMP WITH TIME ZONE, "created_by" uuid NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "lifted_at" TIMESTAMP WITH TIME ZONE, "lifted_by" uuid, "lift_reason" text, CONSTRAINT "PK_a4d6f261bffa4615c62d756566a" PRIMARY KEY ("id"))',
    );
    await queryRunner.query('CREATE INDEX "IDX_bans_team" ON "bans" ("team_id") ');
    await queryRunner.query('CREATE INDEX "IDX_bans_user" ON "bans" ("user_id") ');
    await queryRunner.query('ALTER TABLE "runs" ADD "disqualified_at" TIMESTAMP WITH TIME ZONE');
    await queryRunner.query('ALTER TABLE "runs" ADD "disqualified_reason" text');
    await queryRunner.query('ALTER TABLE "runs" ADD "disqualified_by" uuid');
    // The audit log is append-only: whatever connects to the database cannot rewrite history.
    await queryRunner.query(`CREATE FUNCTION audit_log_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'audit_log is append-only: % is refused', TG_OP; END $$`);
    await queryRunner.query(
      'CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE ON "audit_log" FOR EACH ROW EXECUTE FUNCTION audit_log_immutable()',
    );
    await queryRunner.query(
      'CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON "audit_log" FOR EACH STATEMENT EXECUTE FUNCTION audit_log_immutable()',
    );
    await queryRunner.query(
      'ALTER TABLE "bans" ADD CONSTRAINT "CHK_bans_one_subject" CHECK ((user_id IS NULL) <> (team_id IS NULL))',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "bans" DROP CONSTRAINT "CHK_bans_one_subject"');
    await queryRunner.query('DROP TRIGGER audit_log_no_truncate ON "audit_log"');
    await queryRunner.query('DROP TRIGGER audit_log_no_change ON "audit_log"');
    await queryRunner.query('DROP FUNCTION audit_log_immutable()');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "disqualified_by"');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "disqualified_reason"');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "disqualified_at"');
    await queryRunner.query('DROP INDEX "public"."IDX_bans_user"');
    await queryRunner.query('DROP INDEX "public"."IDX_bans_team"');
    await queryRunner.query('DROP TABLE "bans"');
    await queryRunner.query('DROP INDEX "public"."IDX_audit_log_at"');
    await queryRunner.query('DROP TABLE "audit_log"');
  }
}
