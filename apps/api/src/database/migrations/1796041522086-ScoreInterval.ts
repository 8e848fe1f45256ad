import { MigrationInterface, QueryRunner } from 'typeorm';

export class ScoreInterval1796041522086 implements MigrationInterface {
  name = 'ScoreInterval1796041522086';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "runs" ADD "score_interval" jsonb');
    await queryRunner.query('ALTER TABLE "runs" ADD "pairs" integer');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "pairs"');
    await queryRunner.query('ALTER TABLE "runs" DROP COLUMN "score_interval"');
  }
}
