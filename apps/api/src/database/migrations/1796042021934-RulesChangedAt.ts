import { MigrationInterface, QueryRunner } from 'typeorm';

export class RulesChangedAt1796042021934 implements MigrationInterface {
  name = 'RulesChangedAt1796042021934';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'ALTER TABLE "benchmark_settings" ADD "rules_changed_at" TIMESTAMP WITH TIME ZONE',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE "benchmark_settings" DROP COLUMN "rules_changed_at"');
  }
}
