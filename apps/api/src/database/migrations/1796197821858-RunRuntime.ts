import { MigrationInterface, QueryRunner } from 'typeorm';

export class RunRuntime1796197821858 implements MigrationInterface {
  name = 'RunRuntime1796197821858';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "runs" ADD "runtime" jsonb');
    await queryRunner.query('ALTER TABLE "runs" ADD "runtime_mismatch" jsonb');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "runtime_mismatch"');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "runtime"');
  }
}
