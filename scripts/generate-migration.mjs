#!/usr/bin/env node
// Writes a migration with the SQL that brings the checked-in schema up to the entities, like
// `typeorm migration:generate`, against a scratch database it creates and drops.
// Usage: npm run migration:generate -- Name   (DATABASE_URL: a server where it may create databases)
import { createRequire } from 'node:module';
import { writeFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const name = process.argv[2];
if (!name || !/^[A-Z][A-Za-z0-9]+$/.test(name)) {
  console.error('Usage: npm run migration:generate -- PascalCaseName');
  process.exit(2);
}
const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const scratch = `dryft_migration_${Date.now()}`;
const admin = new pg.Client({ connectionString: serverUrl });
await admin.connect();
await admin.query(`CREATE DATABASE ${scratch}`);
const url = new URL(serverUrl);
url.pathname = `/${scratch}`;
const { DataSource } = require('typeorm');
const { dataSourceOptions } = require(path.join(root, 'apps/api/dist/database/data-source.js'));
const ds = new DataSource(dataSourceOptions(url.toString()));
try {
  await ds.initialize();
  await ds.runMigrations();
  const sql = await ds.driver.createSchemaBuilder().log();
  if (sql.upQueries.length === 0) {
    console.log('The entities and the migrations agree; nothing to generate.');
  } else {
    const ts = Date.now();
    const cls = `${name}${ts}`;
    const q = (list) =>
      list.map((x) => `    await queryRunner.query(${JSON.stringify(x.query)});`).join('\n');
    const file = `import { MigrationInterface, QueryRunner } from 'typeorm';

export class ${cls} implements MigrationInterface {
  name = '${cls}';

  async up(queryRunner: QueryRunner): Promise<void> {
${q(sql.upQueries)}
  }

  async down(queryRunner: QueryRunner): Promise<void> {
${q([...sql.downQueries].reverse())}
  }
}
`;
    const dir = path.join(root, 'apps/api/src/database/migrations');
    writeFileSync(path.join(dir, `${ts}-${name}.ts`), file);
    const indexPath = path.join(dir, 'index.ts');
    let index = readFileSync(indexPath, 'utf8');
    index =
      `import { ${cls} } from './${ts}-${name}';\n` +
      index.replace(
        /= \[(.*)\];/s,
        (_, inner) => `= [${inner.trim() ? inner.trim().replace(/,?$/, ', ') : ''}${cls}];`,
      );
    writeFileSync(indexPath, index);
    console.log(
      `Wrote apps/api/src/database/migrations/${ts}-${name}.ts (${sql.upQueries.length} statements)`,
    );
  }
} finally {
  if (ds.isInitialized) await ds.destroy();
  await admin.query(`DROP DATABASE ${scratch}`);
  await admin.end();
}
