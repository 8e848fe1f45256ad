import { MigrationInterface, QueryRunner } from 'typeorm';

export class LeaseLost1796100000000 implements MigrationInterface {
  name = 'LeaseLost1796100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "runs" ADD "lease_lost_at" TIMESTAMP WITH TIME ZONE');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "lease_lost_at"');
  }
}
