import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARCHIVE_LIMITS } from '@dryft/libs';
import { archiveOf } from '../support/archives';
import { ROOT, startTestHub, TestHub } from '../support/hub';
import { ownerWithTeam, TestUser } from '../support/users';

/**
 * Issue 30, item 1: uploads are checked on the API's pool of worker threads. A full pool refuses at
 * once with 503 `checker_busy` and Retry-After, a check past its budget is ended and refused the
 * same way, and neither stores anything; over 4 MiB of Python is refused by the rule before parsing.
 * (The stall itself, measured on real processes, is test/fault/upload-stall.spec.ts.)
 */
const engine = readFileSync(path.join(ROOT, 'starters/toy-decode/engine/engine.py'), 'utf8');
const line = 'value_0123 = [1, 2, 3] + [4, 5, 6]\n';
const pythonOf = (bytes: number) => line.repeat(Math.floor(bytes / line.length));
/** Just under the bound: the longest check an archive can ask for (about 1.3 s on a quiet core). */
const heavy = archiveOf({ 'engine.py': engine, 'big.py': pythonOf(ARCHIVE_LIMITS.pythonBytes - 64 * 1024) });

const stored = async (user: TestUser) =>
  ((await user.get('/api/submissions?limit=100')).body.items as unknown[]).length;
const send = (user: TestUser, content: Buffer) =>
  user.upload('/api/submissions', { benchmark: 'toy-decode' }, { name: 'engine.tar.gz', content });

describe('upload checks off the event loop: a bounded pool that says when to retry', () => {
  let hub: TestHub;
  let owner: TestUser;
  beforeAll(async () => {
    hub = await startTestHub({ env: { UPLOAD_CHECK_WORKERS: '1', UPLOAD_CHECK_QUEUE: '0' } });
    ({ owner } = await ownerWithTeam(hub, 'checker-owner'));
  });
  afterAll(async () => hub?.close());

  it('a full pool (one thread, no queue) refuses the uploads it cannot take with 503 checker_busy and Retry-After, storing nothing', async () => {
    const answers = await Promise.all([0, 1, 2].map(() => send(owner, heavy)));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses[0]).toBe(201);
    const busy = answers.filter((a) => a.status === 503);
    expect(busy.length).toBeGreaterThan(0);
    for (const b of busy) {
      expect(b.body.error.code).toBe('checker_busy');
      expect(b.body.error.message).toMatch(/nothing was stored\. Send it again in \d+ s/);
      expect(Number(b.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    expect(await stored(owner)).toBe(answers.filter((a) => a.status === 201).length);
    // Once the thread is free, the next upload is checked and stored.
    expect((await send(owner, archiveOf({ 'engine.py': engine }))).status).toBe(201);
  });

  it('refuses more than 4 MiB of Python in one archive by the rule, before parsing it (the 15 MiB big.py of the issue)', async () => {
    const before = await stored(owner);
    const huge = archiveOf({ 'engine.py': engine, 'big.py': pythonOf(15 * 1024 * 1024) });
    expect(huge.length).toBeLessThan(ARCHIVE_LIMITS.compressedBytes);
    const t0 = Date.now();
    const res = await send(owner, huge);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('invalid_submission');
    expect(res.body.error.message).toMatch(
      /python_syntax: The \.py files add up to \d+ bytes; at most 4194304 bytes \(4 MiB\) of Python are checked per archive\. .*"big\.py"/,
    );
    const verdict = res.body.error.details.verdicts.find((v: { rule: string }) => v.rule === 'python_syntax');
    expect(verdict.passed).toBe(false);
    // Refused on the size, not after 5 s of parsing.
    expect(Date.now() - t0).toBeLessThan(4000);
    expect(await stored(owner)).toBe(before);
  });

  it('checks the single-file product on the pool as well (a broken submission.py is refused with its line)', async () => {
    const sample = readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py'));
    const ok = await owner.upload(
      '/api/submissions',
      { benchmark: 'deep-recurrence' },
      { name: 'submission.py', content: sample },
    );
    expect(ok.status).toBe(201);
    const broken = await owner.upload(
      '/api/submissions',
      { benchmark: 'deep-recurrence' },
      { name: 'submission.py', content: Buffer.from('def f(:\n') },
    );
    expect(broken.status).toBe(422);
    expect(broken.body.error.message).toMatch(/python_syntax: submission\.py, line 1, column \d+/);
  });
});

describe('upload checks: the time budget per upload', () => {
  let hub: TestHub;
  let owner: TestUser;
  beforeAll(async () => {
    hub = await startTestHub({ env: { UPLOAD_CHECK_TIMEOUT_SECONDS: '0.3' } });
    ({ owner } = await ownerWithTeam(hub, 'budget-owner'));
  });
  afterAll(async () => hub?.close());

  it('a check past its budget is ended and refused with 503 and Retry-After; nothing is stored, and the next upload gets a fresh thread', async () => {
    // A small archive fits the budget once a thread is up (starting one counts as waiting; a client
    // told Retry-After sends again, as here). On a loaded box even its check can pass 0.3 s: the
    // same refusal, and the same retry.
    const small = async () => {
      let res = await send(owner, archiveOf({ 'engine.py': engine }));
      for (let i = 0; i < 20 && res.status === 503; i++) {
        expect(res.body.error.code).toBe('checker_busy');
        expect(res.body.error.message).toMatch(
          /(No upload checker was free|Checking this upload did not finish) within 0\.3 s.*, so nothing was stored/,
        );
        res = await send(owner, archiveOf({ 'engine.py': engine }));
      }
      return res;
    };
    expect((await small()).status).toBe(201);
    const res = await send(owner, heavy);
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('checker_busy');
    expect(res.body.error.message).toMatch(/did not finish within 0\.3 s .* nothing was stored/);
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(await stored(owner)).toBe(1);
    // The thread that ran past its budget was ended; a fresh one checks the next upload.
    expect((await small()).status).toBe(201);
    expect(await stored(owner)).toBe(2);
  });
});
