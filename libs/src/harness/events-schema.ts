import { z } from 'zod';
import { FailureCode, HarnessChildEvent, HarnessEvent, ScoreInterval, WorkloadSummary } from './events';

/** Where the generated schema is committed, from the repository root (`npm run schema:harness`). */
export const HARNESS_EVENTS_SCHEMA_PATH = 'harness/harness/events.schema.json';

/**
 * Every line the harness may write on its event channel (the hub's HarnessEvent plus the agent-only
 * child event), as JSON Schema (draft 2020-12, output shapes: no key beyond the declared ones).
 * The Python side validates what it writes against the committed file and takes its failure codes
 * from `$defs.FailureCode`, so the two sides cannot drift apart.
 */
export function harnessEventsJsonSchema(): Record<string, unknown> {
  const named = z.registry<{ id: string }>();
  named.add(FailureCode, { id: 'FailureCode' });
  named.add(WorkloadSummary, { id: 'WorkloadSummary' });
  named.add(ScoreInterval, { id: 'ScoreInterval' });
  const line = z.discriminatedUnion('type', [...HarnessEvent.options, HarnessChildEvent]);
  return {
    $comment:
      'Generated from libs/src/harness/events.ts by `npm run schema:harness`; do not edit by hand.',
    ...z.toJSONSchema(line, { target: 'draft-2020-12', io: 'output', metadata: named }),
  };
}

/** The committed file's exact text. */
export function harnessEventsSchemaText(): string {
  return `${JSON.stringify(harnessEventsJsonSchema(), null, 2)}\n`;
}
