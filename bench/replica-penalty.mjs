#!/usr/bin/env node
// The cross-replica penalty: a two-replica run's table (`node bench/run.mjs --replicas 2`) beside a
// one-process run's (`node bench/run.mjs`), each with its own bare baseline, and each Dryft figure of
// two replicas as a ratio to one process. Reads the rows those runs leave in .data (or the two files
// named: one process first). Run the two back to back: on a shared machine only figures taken minutes
// apart compare.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fmt, ratio } from './common.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const [oneFile, twoFile] =
  process.argv.length > 3
    ? process.argv.slice(2, 4)
    : [1, 2].map((n) => path.join(root, '.data', `bench-rows.replicas-${n}.json`));
const [one, two] = [oneFile, twoFile].map((f) => JSON.parse(readFileSync(f, 'utf8')));
console.log(`one process: ${one.at}; two replicas: ${two.at}\n`);
console.log(
  '| measurement | 2 replicas | bare | 2 replicas / bare | 1 process | bare | 1 process / bare | penalty: 2 replicas / 1 process |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const [name, d2, r2] of two.rows) {
  const row = one.rows.find((r) => r[0] === name);
  if (!row) continue;
  const [, d1, r1] = row;
  console.log(
    `| ${name} | ${fmt(d2)} | ${fmt(r2)} | ${ratio(d2, r2)} | ${fmt(d1)} | ${fmt(r1)} | ${ratio(d1, r1)} | ${ratio(d2, d1)} |`,
  );
}
