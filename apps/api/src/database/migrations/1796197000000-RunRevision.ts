import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every change to a run's row bumps its revision, in the database itself (a trigger), so raw
 * UPDATEs and TypeORM saves alike count. Views carry it: a client that holds a newer snapshot
 * drops an older one that arrives late (a REST read answered after a live status, or a view
 * built before a concurrent change and emitted after it).
 */
export class RunRevision1796197000000 implements MigrationInterface {
  name = 'RunRevision1796197000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "runs" ADD "revision" bigint NOT NULL DEFAULT 0');
    await queryRunner.query(
      `CREATE FUNCTION "runs_bump_revision"() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN NEW.revision := OLD.revision + 1; RETURN NEW; END $$`,
    );
    await queryRunner.query(
      'CREATE TRIGGER "TRG_runs_revision" BEFORE UPDATE ON "runs" FOR EACH ROW EXECUTE FUNCTION "runs_bump_revision"()',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TRIGGER "TRG_runs_revision" ON "runs"');
    await queryRunner.query('DROP FUNCTION "runs_bump_revision"()');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "revision"');
  }
}
