// `npm run schema:harness`: writes the JSON Schema of the harness events (generated from the zod
// schemas in libs/src/harness/events.ts) where the Python harness reads it. libs must be built.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { HARNESS_EVENTS_SCHEMA_PATH, harnessEventsSchemaText } = require(
  path.join(root, 'libs/dist/harness/events-schema.js'),
);
writeFileSync(path.join(root, HARNESS_EVENTS_SCHEMA_PATH), harnessEventsSchemaText());
console.log(`wrote ${HARNESS_EVENTS_SCHEMA_PATH}`);
