import { describe, expect, it } from 'vitest';
import { HarnessEvents } from '../src/harness-events';

describe('HarnessEvents: who is blamed if the harness dies without a verdict', () => {
  const said: string[] = [];
  const events = () =>
    new HarnessEvents({
      line: (_stream: string, text: string) => void said.push(text),
      event: () => undefined,
    } as never);
  const child = (role: string, state: 'started' | 'stopped') =>
    JSON.stringify({ type: 'child', role, state });

  it('counts the candidate (and training) child as untrusted, never the baseline or reference engine', () => {
    const e = events();
    e.line(child('candidate', 'started'));
    expect(e.untrustedRunning).toBe(true);
    e.line(child('candidate', 'stopped'));
    e.line(child('reference', 'started'));
    expect(e.untrustedRunning).toBe(false);
    e.line(child('baseline', 'started'));
    expect(e.untrustedRunning).toBe(false);
    e.line(child('training', 'started'));
    expect(e.untrustedRunning).toBe(true);
    // Every one of them is a child event the agent knows (a reference child is not "malformed").
    expect(said).toEqual([]);
  });
});
