#!/usr/bin/env node
'use strict';
// `npx dryft …` in the workspace, or `dryft` once installed: runs the compiled CLI.
const path = require('node:path');
const main = path.join(__dirname, '..', 'dist', 'main.js');
try {
  require.resolve(main);
} catch {
  process.stderr.write(
    'error: the dryft CLI is not built yet: run `npm run build` at the repository root.\n',
  );
  process.exit(2);
}
require(main);
