#!/usr/bin/env node
// Writes every starter as a participant gets it: the starter's own folder with the shared files of
// starters/_shared/ laid over it (libs/src/starters/tree.ts, the same code as the hub's "Download
// template"). Each OUT/<starter>/ is the tree to publish as that benchmark's GitHub template
// repository. The repository keeps one copy of a shared file; never edit one in OUT.
//
//   npm run starters:build                  # into dist/starters/
//   node scripts/build-starters.mjs OUT     # (after `npx tsc -b libs`)
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const { SHARED_STARTER_DIR, writeStarter } = require(path.join(root, 'libs/dist/node.js'));

const out = path.resolve(process.argv[2] ?? path.join(root, 'dist/starters'));
const startersDir = path.join(root, 'starters');
for (const entry of readdirSync(startersDir, { withFileTypes: true })) {
  if (!entry.isDirectory() || entry.name === SHARED_STARTER_DIR) continue;
  const files = await writeStarter(path.join(startersDir, entry.name), path.join(out, entry.name));
  console.log(
    `[starters] ${path.relative(process.cwd(), path.join(out, entry.name)) || '.'}: ${files.length} files`,
  );
}
