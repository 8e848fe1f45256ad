import { MigrationInterface, QueryRunner } from 'typeorm';

export class ClosingNotice1796197100000 implements MigrationInterface {
  name = 'ClosingNotice1796197100000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "scheduled_actions" ADD "notice_sent_at" TIMESTAMP WITH TIME ZONE');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "scheduled_actions" DROP COLUMN "notice_sent_at"');
  }
}
