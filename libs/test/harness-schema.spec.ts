import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FailureCode } from '../src/harness/events';
import {
  HARNESS_EVENTS_SCHEMA_PATH,
  harnessEventsJsonSchema,
  harnessEventsSchemaText,
} from '../src/harness/events-schema';

const root = path.resolve(__dirname, '../..');

describe('the committed JSON Schema of the harness events', () => {
  it('is what the zod schemas generate now (run `npm run schema:harness` after changing them)', () => {
    const committed = readFileSync(path.join(root, HARNESS_EVENTS_SCHEMA_PATH), 'utf8');
    expect(committed).toBe(harnessEventsSchemaText());
  });

  it('names the failure codes once, and every event type the harness writes', () => {
    const schema = harnessEventsJsonSchema() as {
      oneOf: { properties: { type: { const: string } } }[];
      $defs: { FailureCode: { enum: string[] } };
    };
    expect(schema.$defs.FailureCode.enum).toEqual(FailureCode.options);
    expect(schema.oneOf.map((o) => o.properties.type.const).sort()).toEqual(
      ['baseline', 'check', 'child', 'log', 'metric', 'result', 'sample'].sort(),
    );
  });
});
