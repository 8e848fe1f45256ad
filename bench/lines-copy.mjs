#!/usr/bin/env node
// Persisted log lines/s on Postgres alone (no API), each way of storing a batch side by side in one
// run. Every method is a whole batch as the API stores it: one transaction that locks the run row,
// checks the batch number (a batch at or below the stored one is a resend: not stored again), stores
// the lines, advances the run's counters and commits; the writer sends its next batch only after the
// commit. WRITERS writers (one run each) in parallel for SECONDS per method, BATCH lines per batch.
//
//   unnest           INSERT … SELECT FROM unnest($2::int[], …) ON CONFLICT DO NOTHING (text arrays)
//   unnest-prepared  the same as a named prepared statement (parsed and planned once per connection)
//   copy-binary      binary COPY straight into run_logs (the lock and the batch number keep it once)
//   copy-temp        text COPY into a temp table, then INSERT … SELECT … ON CONFLICT DO NOTHING
//   group            group commit: the batches waiting when a commit ends go into the next one
//                    transaction (one unnest insert over all their runs); each writer's ack still
//                    waits for the commit holding its batch
//   chunk            the batch as one row of run_log_chunks, its lines one JSON text (what the
//                    API stores since 2026-11-30: apps/api/src/runs/log-chunk.ts)
//
// Beside lines/s it prints the CPU each method costs per 1,000 lines in this process (what the API
// would spend) and in the database's backends. Not part of `npm run bench`. Needs DATABASE_URL (a
// server; it creates and drops its own database) and pg-copy-streams (a dev dependency).
// ORDER=copy-binary,unnest,… picks and orders the methods (the table grows as the run goes on: run
// twice in opposite orders to check fairness).
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const require = createRequire(path.join(root, 'apps/api/package.json'));
const pg = require('pg');
const copyFrom = require('pg-copy-streams').from;
const WRITERS = Number(process.env.WRITERS ?? 5);
const SECONDS = Number(process.env.SECONDS ?? 5);
const BATCH = Number(process.env.BATCH ?? 5000);
const ORDER = (process.env.ORDER ?? 'unnest,unnest-prepared,copy-binary,copy-temp,group,chunk').split(',');
const server = process.env.DATABASE_URL;
if (!server) throw new Error('set DATABASE_URL');

const name = `dryft_copy_${Date.now()}`;
const admin = new pg.Client({ connectionString: server });
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const url = new URL(server);
url.pathname = `/${name}`;
const pool = new pg.Pool({ connectionString: url.toString(), max: WRITERS + 2 });
pool.on('error', () => {}); // the DROP … WITH (FORCE) at the end ends idle connections
await pool.query(
  'CREATE TABLE run_logs (run_id uuid NOT NULL, seq integer NOT NULL, ts bigint NOT NULL, stream text NOT NULL, text text NOT NULL, PRIMARY KEY (run_id, seq))',
);
await pool.query(
  'CREATE TABLE run_log_chunks (run_id uuid NOT NULL, first_seq integer NOT NULL, last_seq integer NOT NULL, line_count integer NOT NULL, lines text NOT NULL, PRIMARY KEY (run_id, first_seq))',
);
await pool.query(
  'CREATE TABLE runs (id uuid PRIMARY KEY, last_batch_seq integer NOT NULL DEFAULT 0, last_log_seq integer NOT NULL DEFAULT 0, log_lines integer NOT NULL DEFAULT 0)',
);

const text = 'x'.repeat(52) + '\tand a tab \\ and a backslash';
const batch = (from) =>
  Array.from({ length: BATCH }, (_, i) => ({ seq: from + i, ts: Date.now(), stream: 'out', text }));
const esc = (s) =>
  s.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]);
const copyInto = (client, sql, body) =>
  new Promise((resolve, reject) => {
    const stream = client.query(copyFrom(sql));
    stream.on('finish', resolve);
    stream.on('error', reject);
    stream.end(body);
  });

/** The body of a binary COPY into run_logs: per tuple the field count, then each field's length and bytes. */
function binaryLogCopy(runId, lines) {
  const id = Buffer.from(runId.replace(/-/g, ''), 'hex');
  const parts = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)];
  for (const l of lines) {
    const stream = Buffer.from(l.stream);
    const text = Buffer.from(l.text);
    const fixed = Buffer.alloc(2 + 20 + 8 + 12 + 4);
    let at = fixed.writeInt16BE(5, 0);
    at = fixed.writeInt32BE(16, at);
    at += id.copy(fixed, at);
    at = fixed.writeInt32BE(4, at);
    at = fixed.writeInt32BE(l.seq, at);
    at = fixed.writeInt32BE(8, at);
    at = fixed.writeBigInt64BE(BigInt(Math.round(l.ts)), at);
    fixed.writeInt32BE(stream.length, at);
    const textLength = Buffer.alloc(4);
    textLength.writeInt32BE(text.length);
    parts.push(fixed, stream, textLength, text);
  }
  const trailer = Buffer.alloc(2);
  trailer.writeInt16BE(-1);
  parts.push(trailer);
  return Buffer.concat(parts);
}

const UNNEST = `INSERT INTO run_logs (run_id, seq, ts, stream, text)
  SELECT $1, * FROM unnest($2::int[], $3::bigint[], $4::text[], $5::text[]) ON CONFLICT DO NOTHING`;
const columns = (runId, lines) => [
  runId,
  lines.map((l) => l.seq),
  lines.map((l) => l.ts),
  lines.map((l) => l.stream),
  lines.map((l) => l.text),
];

/** How each method stores one batch's lines, inside the batch's transaction. */
const stores = {
  unnest: (client, runId, lines) => client.query(UNNEST, columns(runId, lines)),
  'unnest-prepared': (client, runId, lines) =>
    client.query({ name: 'insert_logs', text: UNNEST, values: columns(runId, lines) }),
  'copy-binary': (client, runId, lines) =>
    copyInto(
      client,
      'COPY run_logs (run_id, seq, ts, stream, text) FROM STDIN (FORMAT binary)',
      binaryLogCopy(runId, lines),
    ),
  chunk: (client, runId, lines) =>
    client.query({
      name: 'insert_chunk',
      text: 'INSERT INTO run_log_chunks (run_id, first_seq, last_seq, line_count, lines) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING',
      values: [
        runId,
        lines[0].seq,
        lines[lines.length - 1].seq,
        lines.length,
        JSON.stringify(lines.map((l) => [l.seq, l.ts, l.stream, l.text])),
      ],
    }),
  async 'copy-temp'(client, runId, lines) {
    await client.query(
      'CREATE TEMP TABLE IF NOT EXISTS run_logs_in (seq integer, ts bigint, stream text, text text) ON COMMIT DELETE ROWS',
    );
    const body = lines.map((l) => `${l.seq}\t${l.ts}\t${l.stream}\t${esc(l.text)}\n`).join('');
    await copyInto(client, 'COPY run_logs_in FROM STDIN', body);
    await client.query(
      'INSERT INTO run_logs (run_id, seq, ts, stream, text) SELECT $1, seq, ts, stream, text FROM run_logs_in ON CONFLICT DO NOTHING',
      [runId],
    );
  },
};

/** One transaction for the batches given: lock, check the batch numbers, store what is new, commit. */
async function commitBatches(client, store, batches) {
  await client.query('BEGIN');
  try {
    const ids = batches.map((b) => b.runId);
    const { rows } = await client.query(
      'SELECT id, last_batch_seq FROM runs WHERE id = ANY($1) ORDER BY id FOR UPDATE',
      [ids],
    );
    const last = new Map(rows.map((r) => [r.id, r.last_batch_seq]));
    const fresh = batches.filter((b) => b.seq === last.get(b.runId) + 1);
    if (fresh.length) {
      await store(client, fresh);
      await client.query(
        `UPDATE runs r SET last_batch_seq = u.b, last_log_seq = u.l, log_lines = r.log_lines + u.n
           FROM unnest($1::uuid[], $2::int[], $3::int[], $4::int[]) AS u(id, b, l, n) WHERE r.id = u.id`,
        [
          fresh.map((b) => b.runId),
          fresh.map((b) => b.seq),
          fresh.map((b) => b.lines[b.lines.length - 1].seq),
          fresh.map((b) => b.lines.length),
        ],
      );
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
}

/** A writer's batch goes through its own transaction on its own connection. */
const perBatch = (method) => {
  const store = stores[method];
  return async (runId, seq, lines, client) =>
    commitBatches(client, (c, [b]) => store(c, b.runId, b.lines), [{ runId, seq, lines }]);
};

/** Group commit: one committer; what waits while it commits goes into its next transaction. */
function groupCommitter() {
  let waiting = [];
  let busy = false;
  let client;
  const drain = async () => {
    if (busy || waiting.length === 0) return;
    busy = true;
    const group = waiting;
    waiting = [];
    client ??= await pool.connect();
    try {
      await commitBatches(
        client,
        (c, bs) =>
          c.query(
            `INSERT INTO run_logs (run_id, seq, ts, stream, text)
               SELECT * FROM unnest($1::uuid[], $2::int[], $3::bigint[], $4::text[], $5::text[]) ON CONFLICT DO NOTHING`,
            [
              bs.flatMap((b) => b.lines.map(() => b.runId)),
              bs.flatMap((b) => b.lines.map((l) => l.seq)),
              bs.flatMap((b) => b.lines.map((l) => l.ts)),
              bs.flatMap((b) => b.lines.map((l) => l.stream)),
              bs.flatMap((b) => b.lines.map((l) => l.text)),
            ],
          ),
        group,
      );
      for (const g of group) g.resolve();
    } catch (err) {
      for (const g of group) g.reject(err);
    }
    busy = false;
    void drain();
  };
  return {
    write: (runId, seq, lines) =>
      new Promise((resolve, reject) => {
        waiting.push({ runId, seq, lines, resolve, reject });
        void drain();
      }),
    release: () => client?.release(),
  };
}

/** CPU ms of this process and of the database's backends. */
async function cpu() {
  const { rows } = await pool.query('SELECT pid FROM pg_stat_activity WHERE datname = current_database()');
  const backends = new Map();
  for (const { pid } of rows) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      backends.set(pid, (Number(f[11]) + Number(f[12])) * 10);
    } catch {
      // ended meanwhile
    }
  }
  const self = process.cpuUsage();
  return { self: (self.user + self.system) / 1000, backends };
}

const results = {};
for (const method of ORDER) {
  const runs = Array.from({ length: WRITERS }, () => randomUUID());
  await pool.query('INSERT INTO runs (id) SELECT unnest($1::uuid[])', [runs]);
  const group = method === 'group' ? groupCommitter() : null;
  const write = group ? null : perBatch(method);
  const before = await cpu();
  const t0 = Date.now();
  const end = t0 + SECONDS * 1000;
  await Promise.all(
    runs.map(async (runId) => {
      const client = group ? null : await pool.connect();
      let seq = 0;
      let from = 1;
      while (Date.now() < end) {
        const lines = batch(from);
        seq++;
        const send = () => (group ? group.write(runId, seq, lines) : write(runId, seq, lines, client));
        await send();
        if (seq === 1) await send(); // a retried batch: stored once
        from += BATCH;
      }
      client?.release();
    }),
  );
  const ms = Date.now() - t0;
  const after = await cpu();
  group?.release();
  let backendMs = 0;
  for (const [pid, t] of after.backends) backendMs += t - (before.backends.get(pid) ?? 0);
  const { rows } =
    method === 'chunk'
      ? await pool.query(
          `SELECT count(*)::int AS n, count(DISTINCT (run_id, (l->>0)::int))::int AS d, bool_and(l->>3 = $2) AS same
             FROM run_log_chunks, json_array_elements(lines::json) l WHERE run_id = ANY($1)`,
          [runs, text],
        )
      : await pool.query(
          'SELECT count(*)::int AS n, count(DISTINCT (run_id, seq))::int AS d, bool_and(text = $2) AS same FROM run_logs WHERE run_id = ANY($1)',
          [runs, text],
        );
  const n = rows[0].n;
  results[method] = {
    linesPerSecond: Math.round((n / ms) * 1000),
    stored: n,
    distinct: rows[0].d,
    textIntact: rows[0].same,
    clientCpuMsPer1000: Number((((after.self - before.self) / n) * 1000).toFixed(2)),
    backendCpuMsPer1000: Number(((backendMs / n) * 1000).toFixed(2)),
  };
}
console.log(JSON.stringify({ writers: WRITERS, batch: BATCH, seconds: SECONDS, results }, null, 1));
await pool.end();
await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
await admin.end();
