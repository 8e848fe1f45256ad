#!/usr/bin/env node
// Persisted log lines/s on Postgres: the API's multi-row insert (unnest, ON CONFLICT DO NOTHING)
// against COPY into a temporary table then INSERT … SELECT … ON CONFLICT DO NOTHING (exactly once by
// (run, seq) all the same), each committed before the next batch, WRITERS writers in parallel for
// SECONDS each. Not part of `npm run bench`: pg-copy-streams is not a dependency of Dryft, so point
// PG_COPY_STREAMS at an installed copy (`npm install --prefix /tmp/x pg-copy-streams`, then
// PG_COPY_STREAMS=/tmp/x/node_modules/pg-copy-streams). Needs DATABASE_URL (a server; it creates and
// drops its own database).
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';

const require = createRequire(import.meta.url);
const pg = require('pg');
const copyFrom = require(process.env.PG_COPY_STREAMS ?? 'pg-copy-streams').from;
const WRITERS = Number(process.env.WRITERS ?? 5);
const SECONDS = Number(process.env.SECONDS ?? 5);
const BATCH = Number(process.env.BATCH ?? 5000);
const server = process.env.DATABASE_URL;
if (!server) throw new Error('set DATABASE_URL');

const name = `dryft_copy_${Date.now()}`;
const admin = new pg.Client({ connectionString: server });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const url = new URL(server);
url.pathname = `/${name}`;
const pool = new pg.Pool({ connectionString: url.toString(), max: WRITERS });
pool.on('error', () => {}); // the DROP … WITH (FORCE) at the end ends idle connections
await pool.query(
  'CREATE TABLE run_logs (run_id uuid NOT NULL, seq integer NOT NULL, ts bigint NOT NULL, stream text NOT NULL, text text NOT NULL, PRIMARY KEY (run_id, seq))',
);

const text = 'x'.repeat(52) + '\tand a tab \\ and a backslash';
const batch = (from) =>
  Array.from({ length: BATCH }, (_, i) => ({ seq: from + i, ts: Date.now(), stream: 'out', text }));
const esc = (s) =>
  s.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]);

const methods = {
  async unnest(client, runId, lines) {
    await client.query(
      `INSERT INTO run_logs (run_id, seq, ts, stream, text)
       SELECT $1, * FROM unnest($2::int[], $3::bigint[], $4::text[], $5::text[]) ON CONFLICT DO NOTHING`,
      [
        runId,
        lines.map((l) => l.seq),
        lines.map((l) => l.ts),
        lines.map((l) => l.stream),
        lines.map((l) => l.text),
      ],
    );
  },
  async copy(client, runId, lines) {
    await client.query('BEGIN');
    await client.query(
      'CREATE TEMP TABLE IF NOT EXISTS run_logs_in (seq integer, ts bigint, stream text, text text) ON COMMIT DELETE ROWS',
    );
    const body = lines.map((l) => `${l.seq}\t${l.ts}\t${l.stream}\t${esc(l.text)}\n`).join('');
    await pipeline(Readable.from([body]), client.query(copyFrom('COPY run_logs_in FROM STDIN')));
    await client.query(
      'INSERT INTO run_logs (run_id, seq, ts, stream, text) SELECT $1, seq, ts, stream, text FROM run_logs_in ON CONFLICT DO NOTHING',
      [runId],
    );
    await client.query('COMMIT');
  },
};

const results = {};
// ORDER=copy,unnest runs COPY first (the table grows as the run goes on; swap to check fairness).
for (const method of (process.env.ORDER ?? 'unnest,copy').split(',')) {
  const write = methods[method];
  const runs = Array.from({ length: WRITERS }, () => randomUUID());
  const t0 = Date.now();
  const end = t0 + SECONDS * 1000;
  await Promise.all(
    runs.map(async (runId) => {
      const client = await pool.connect();
      let seq = 1;
      while (Date.now() < end) {
        const lines = batch(seq);
        await write(client, runId, lines);
        if (seq === 1) await write(client, runId, lines); // a retried batch: stored once
        seq += BATCH;
      }
      client.release();
    }),
  );
  const ms = Date.now() - t0;
  const { rows } = await pool.query(
    'SELECT count(*)::int AS n, count(DISTINCT (run_id, seq))::int AS d, bool_and(text = $2) AS same FROM run_logs WHERE run_id = ANY($1)',
    [runs, text],
  );
  results[method] = {
    linesPerSecond: Math.round((rows[0].n / ms) * 1000),
    stored: rows[0].n,
    distinct: rows[0].d,
    textIntact: rows[0].same,
  };
}
console.log(JSON.stringify({ writers: WRITERS, batch: BATCH, seconds: SECONDS, ...results }));
await pool.end();
await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
await admin.end();
