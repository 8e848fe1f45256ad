#!/usr/bin/env node
// Bundles apps/cli into one file, apps/cli/dist/dryft.cjs (Node 20, shebang, no dependencies), and
// writes dryft.cjs.sha256 beside it ("<hex>  dryft.cjs", the format `sha256sum -c` reads). The hub
// serves both for the starter's install-dryft.sh, which checks the download before installing.
//
//   node scripts/bundle-cli.mjs                      # default API URL http://localhost:3000
//   DRYFT_BUNDLE_API_URL=https://hub.example.org node scripts/bundle-cli.mjs
//
// DRYFT_BUNDLE_API_URL bakes the event's hub in as the default, so participants need not set
// DRYFT_API_URL ("the CLI already knows the event server"); DRYFT_API_URL still overrides it.
import { createHash } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'apps', 'cli');
const outfile = path.join(cli, 'dist', 'dryft.cjs');
const { version } = JSON.parse(readFileSync(path.join(cli, 'package.json'), 'utf8'));
const apiUrl = process.env.DRYFT_BUNDLE_API_URL ?? '';
if (apiUrl && !/^https?:\/\//.test(apiUrl)) {
  console.error(`bundle-cli: DRYFT_BUNDLE_API_URL must be an http(s) URL, got ${JSON.stringify(apiUrl)}`);
  process.exit(1);
}

const result = await build({
  entryPoints: [path.join(cli, 'src', 'main.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  // main.ts starts with its own shebang line, which esbuild keeps at the top of the bundle.
  legalComments: 'none',
  minify: false,
  sourcemap: false,
  logLevel: 'warning',
  // The shared libs straight from source: one bundle, no build order between libs and the CLI.
  alias: {
    '@dryft/libs/node': path.join(root, 'libs', 'src', 'node.ts'),
    '@dryft/libs': path.join(root, 'libs', 'src', 'index.ts'),
  },
  tsconfig: path.join(cli, 'tsconfig.json'),
  // ws's optional native speed-ups: absent is fine (ws falls back to JavaScript).
  external: ['bufferutil', 'utf-8-validate'],
  define: { 'process.env.DRYFT_BUNDLED_API_URL': JSON.stringify(apiUrl) },
  metafile: true,
});

chmodSync(outfile, 0o755);
const bytes = readFileSync(outfile);
const sha256 = createHash('sha256').update(bytes).digest('hex');
writeFileSync(`${outfile}.sha256`, `${sha256}  dryft.cjs\n`);
const inputs = Object.keys(result.metafile.inputs).length;
console.log(
  `bundle-cli: ${path.relative(root, outfile)} (dryft ${version}, ${(bytes.length / 1024).toFixed(0)} KiB from ${inputs} files), sha256 ${sha256}${apiUrl ? `, default API ${apiUrl}` : ''}`,
);
