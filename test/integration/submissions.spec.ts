import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveOf, qwenStarter, toyStarter } from '../support/archives';
import { ROOT, startTestHub, TestHub } from '../support/hub';
import { ownerWithTeam, signIn, TestUser, withToken } from '../support/users';

describe('submissions', () => {
  let hub: TestHub;
  let alice: TestUser;
  let team: { id: string };

  beforeAll(async () => {
    hub = await startTestHub();
    ({ owner: alice, team } = await ownerWithTeam(hub, 'sub-alice', 'Fast Qwen'));
  });
  afterAll(async () => hub?.close());

  const upload = (user: TestUser, benchmark: string, name: string, content: Buffer) =>
    user.upload('/api/submissions', { benchmark }, { name, content });

  it('accepts each starter unchanged, names it per source and team, and starts no run', async () => {
    const toy = await upload(alice, 'toy-decode', 'fast-qwen.tar.gz', await toyStarter());
    expect(toy.status).toBe(201);
    expect(toy.body.submission).toMatchObject({
      benchmarkId: 'toy-decode',
      name: 'fast-qwen #1',
      kind: 'archive',
      source: 'upload',
    });
    expect(toy.body.submission.files.map((f: { path: string }) => f.path)).toContain('engine.py');
    expect(toy.body.verdicts.every((v: { passed: boolean }) => v.passed)).toBe(true);
    const again = await upload(alice, 'toy-decode', 'fast-qwen.tar.gz', await toyStarter());
    expect(again.body.submission.name).toBe('fast-qwen #2');
    expect(again.body.submission.sha256).toBe(toy.body.submission.sha256);

    const qwen = await upload(
      alice,
      'qwen3-4b-decode',
      'qwen3-4b-decode-starter.tar.gz',
      await qwenStarter(),
    );
    expect(qwen.status).toBe(201);
    const sample = readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py'));
    const single = await upload(alice, 'deep-recurrence', 'submission.py', sample);
    expect(single.status).toBe(201);
    expect(single.body.submission).toMatchObject({ kind: 'file', fileCount: 1 });

    const runs = await alice.get('/api/runs');
    expect(runs.body.items).toEqual([]);
  });

  it('stores an upload once per Idempotency-Key: a double click or a retry replays the first', async () => {
    const { owner } = await ownerWithTeam(hub, 'sub-idem', 'Double Clickers');
    const content = await toyStarter();
    const send = (key: string, body = content) =>
      owner
        .upload('/api/submissions', { benchmark: 'toy-decode' }, { name: 'engine.tar.gz', content: body })
        .set('Idempotency-Key', key);
    // two at once (a double click): one submission
    const [a, b] = await Promise.all([send('dbl-1'), send('dbl-1')]);
    const statuses = [a.status, b.status].sort();
    expect(statuses[0]).toBe(201);
    expect([201, 409]).toContain(statuses[1]);
    if (statuses[1] === 409) expect((a.status === 409 ? a : b).body.error.code).toBe('idempotency_in_flight');
    // once settled, the same key and file replay the first response
    const again = await send('dbl-1');
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const first = (a.status === 201 ? a : b).body.submission;
    expect(again.body.submission.id).toBe(first.id);
    const list = await owner.get('/api/submissions?benchmark=toy-decode');
    expect(list.body.items).toHaveLength(1);
    // another file under the same key is refused; a new key stores a new submission
    const other = await send('dbl-1', archiveOf({ 'engine.py': 'class Engine:\n    pass\n' }));
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    expect((await send('dbl-2')).body.submission.name).toBe('engine #2');
  });

  it('numbers submissions per benchmark: the same name starts at #1 on each', async () => {
    const { owner } = await ownerWithTeam(hub, 'sub-numbers', 'Two Products');
    const toy = await upload(owner, 'toy-decode', 'shared.tar.gz', await toyStarter());
    const qwen = await upload(owner, 'qwen3-4b-decode', 'shared.tar.gz', await qwenStarter());
    const toyAgain = await upload(owner, 'toy-decode', 'shared.tar.gz', await toyStarter());
    expect([toy.body.submission.name, qwen.body.submission.name, toyAgain.body.submission.name]).toEqual([
      'shared #1',
      'shared #1',
      'shared #2',
    ]);
  });

  it('serves the starter downloads that uploads accept', async () => {
    const res = await hub.http
      .get('/api/benchmarks/toy-decode/starter')
      .buffer(true)
      .parse((r, cb) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => cb(null, Buffer.concat(chunks)));
      });
    expect(res.status).toBe(200);
    expect(res.headers['content-disposition']).toContain('toy-decode-starter.tar.gz');
    expect(Buffer.compare(res.body, await toyStarter())).toBe(0);
    const sample = await hub.http.get('/api/benchmarks/deep-recurrence/starter');
    expect(sample.status).toBe(200);
    expect(sample.headers['content-disposition']).toContain('submission.py');
    const missing = await hub.http.get('/api/benchmarks/nope/starter');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('benchmark_not_found');
  });

  it.each([
    [
      'a ZIP archive',
      'engine.zip',
      () => Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), Buffer.alloc(60)]),
      'format',
      /ZIP archives are not supported/,
    ],
    ['plain text', 'engine.tar.gz', () => Buffer.from('print(1)'), 'format', /not gzip-compressed/],
    [
      'a containing folder',
      'e.tar.gz',
      () => archiveOf({ 'engine/engine.py': 'class Engine: pass\n' }),
      'layout',
      /inside the folder "engine\/"/,
    ],
    ['./ prefixes', 'e.tar.gz', () => archiveOf({ './engine.py': 'class Engine: pass\n' }), 'layout', /\.\//],
    ['no engine.py', 'e.tar.gz', () => archiveOf({ 'model.py': 'x = 1\n' }), 'entrypoint', /no engine\.py/],
    [
      'a binary file type',
      'e.tar.gz',
      () => archiveOf({ 'engine.py': 'x\n', 'kernel.so': Buffer.from([0x7f, 0x45]) }),
      'extensions',
      /kernel\.so/,
    ],
    [
      'non-UTF-8 text',
      'e.tar.gz',
      () => archiveOf({ 'engine.py': Buffer.from([0xff, 0xfe, 0x00]) }),
      'text',
      /not UTF-8/,
    ],
    [
      'a macOS ._ file',
      'e.tar.gz',
      () => archiveOf({ 'engine.py': 'x\n', '._engine.py': 'meta\n' }),
      'text',
      /AppleDouble/,
    ],
    [
      'more than 2 MiB',
      'e.tar.gz',
      () => Buffer.concat([Buffer.from([0x1f, 0x8b]), Buffer.alloc(2 * 1024 * 1024 + 10)]),
      'compressed_size',
      /2 MiB/,
    ],
  ])('refuses %s, naming the rule', async (_what, name, make, rule, message) => {
    const res = await upload(alice, 'toy-decode', name, make());
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('invalid_submission');
    const failed = res.body.error.details.verdicts
      .filter((v: { passed: boolean }) => !v.passed)
      .map((v: { rule: string }) => v.rule);
    expect(failed).toContain(rule);
    expect(res.body.error.message).toMatch(message);
  });

  it('holds single files to their own rules', async () => {
    const wrongName = await upload(alice, 'deep-recurrence', 'train.py', Buffer.from('x = 1\n'));
    expect(wrongName.status).toBe(422);
    expect(wrongName.body.error.message).toMatch(/submission\.py/);
    const tooBig = await upload(
      alice,
      'deep-recurrence',
      'submission.py',
      Buffer.alloc(256 * 1024 + 1, 0x20),
    );
    expect(tooBig.status).toBe(422);
    expect(tooBig.body.error.message).toMatch(/256 KiB/);
    const archive = await upload(alice, 'deep-recurrence', 'submission.py', await toyStarter());
    expect(archive.status).toBe(422);
    expect(archive.body.error.message).toMatch(/UTF-8/);
  });

  it.each([
    [
      'an engine.py with a SyntaxError',
      { 'engine.py': 'class Engine:\n    def __init__(self, model_path)\n        pass\n' },
      'python_syntax',
      "engine.py, line 2, column 35: expected ':'",
    ],
    [
      'a helper module that does not parse',
      {
        'engine.py': readFileSync(path.join(ROOT, 'starters/toy-decode/engine/engine.py'), 'utf8'),
        'ops/fused.py': 'def fused(x):\n    return (x +\n',
      },
      'python_syntax',
      "ops/fused.py, line 2, column 12: '(' was never closed",
    ],
    [
      'an engine.py without class Engine',
      { 'engine.py': 'def generate(input_ids, max_new_tokens):\n    pass\n' },
      'entrypoint',
      'engine.py, line 1, column 1: engine.py does not define class Engine',
    ],
    [
      'an Engine whose generate has the wrong parameters',
      {
        'engine.py':
          'class Engine:\n    def __init__(self, model_path):\n        pass\n\n    def generate(self, prompt):\n        yield []\n',
      },
      'entrypoint',
      'engine.py, line 5, column 5: generate(self, prompt) cannot be called as engine.generate(input_ids, max_new_tokens)',
    ],
  ])('refuses %s with a 422 naming file, line and column', async (_what, files, rule, message) => {
    const res = await upload(alice, 'toy-decode', 'broken.tar.gz', archiveOf(files));
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('invalid_submission');
    expect(res.body.error.message).toContain(message);
    const problem = res.body.error.details.problems.find((p: { rule: string }) => p.rule === rule);
    expect(problem).toMatchObject({ rule, line: expect.any(Number), column: expect.any(Number) });
    expect(problem.entry).toMatch(/\.py$/);
  });

  it('refuses a submission.py that cannot be imported, and a refused upload counts nothing', async () => {
    const { owner: carol } = await ownerWithTeam(hub, 'sub-carol');
    const broken = [
      ['def (:\n    pass\n', 'python_syntax', 'submission.py, line 1, column 5: invalid syntax'],
      ['import torch\nx = [1, 2\n', 'python_syntax', "submission.py, line 2, column 5: '[' was never closed"],
      [
        'import torch\n\ndef build_model(spec):\n    return None\n',
        'entrypoint',
        'does not define SUBMISSION',
      ],
      // What the rules forbid and can be seen without running it: refused at upload, no run spent.
      [
        'import torch\nstate = torch.load("weights.pt")\n',
        'forbidden_uses',
        'submission.py, line 2, column 9: torch.load is not allowed',
      ],
      ['import subprocess\n', 'forbidden_uses', 'subprocess starts other processes'],
      ['from urllib.request import urlopen\n', 'forbidden_uses', 'urllib.request is a network module'],
    ] as const;
    for (const [source, rule, message] of broken) {
      const res = await upload(carol, 'deep-recurrence', 'submission.py', Buffer.from(source));
      expect(res.status).toBe(422);
      expect(res.body.error.message).toContain(message);
      expect(res.body.error.details.verdicts.find((v: { rule: string }) => v.rule === rule).passed).toBe(
        false,
      );
    }
    const quota = await carol.get('/api/quota?benchmark=deep-recurrence');
    expect(quota.body).toEqual(
      expect.arrayContaining([expect.objectContaining({ bucket: 'hard', used: 0, remaining: 1 })]),
    );
    expect((await carol.get('/api/submissions')).body.items).toEqual([]);
    expect((await carol.get('/api/runs')).body.items).toEqual([]);
    // The one Hard run of the day is still there for a file that parses.
    const sample = readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py'));
    const good = await upload(carol, 'deep-recurrence', 'submission.py', sample);
    expect(good.status).toBe(201);
    const run = await carol.post(`/api/submissions/${good.body.submission.id}/runs`, {
      mode: 'official',
      tier: 'hard',
      confirm: true,
    });
    expect(run.status).toBe(201);
    expect(run.body.quota).toMatchObject({ bucket: 'hard', used: 1, limit: 1, remaining: 0 });
  });

  it('refuses missing fields and unknown benchmarks clearly', async () => {
    const noFile = await hub.http
      .post('/api/submissions')
      .set('Cookie', alice.cookie)
      .set('X-CSRF-Token', alice.csrf)
      .field('benchmark', 'toy-decode');
    expect(noFile.status).toBe(400);
    expect(noFile.body.error.code).toBe('file_required');
    const noBenchmark = await alice.upload(
      '/api/submissions',
      {},
      { name: 'e.tar.gz', content: await toyStarter() },
    );
    expect(noBenchmark.status).toBe(400);
    expect(noBenchmark.body.error.message).toMatch(/toy-decode/);
    const unknown = await upload(alice, 'nope', 'e.tar.gz', await toyStarter());
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('benchmark_not_found');
  });

  it('keeps submissions private to their team', async () => {
    const mine = await upload(alice, 'toy-decode', 'private.tar.gz', await toyStarter());
    const { owner: mallory } = await ownerWithTeam(hub, 'sub-mallory');
    const peek = await mallory.get(`/api/submissions/${mine.body.submission.id}`);
    expect(peek.status).toBe(404);
    expect(peek.body.error.code).toBe('submission_not_found');
    const list = await mallory.get('/api/submissions');
    expect(list.body.items).toEqual([]);
    const notUuid = await alice.get('/api/submissions/7');
    expect(notUuid.status).toBe(404);
  });

  it('lists newest first with a cursor, and works with a team API token', async () => {
    const token = (await alice.post(`/api/teams/${team.id}/tokens`, { name: 'script' })).body.token;
    const api = withToken(hub, token);
    const up = await api.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'scripted.tar.gz', content: await toyStarter() },
    );
    expect(up.status).toBe(201);
    const first = await api.get('/api/submissions?limit=2');
    expect(first.body.items).toHaveLength(2);
    expect(first.body.items[0].name).toBe('scripted #1');
    const second = await api.get(`/api/submissions?limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body.items[0].id).not.toBe(first.body.items[1].id);
    const bad = await api.get('/api/submissions?cursor=garbage');
    expect(bad.status).toBe(400);
  });

  it('refuses uploads while the organizer has submissions closed', async () => {
    const admin = await signIn(hub, 'organizer');
    expect(admin.me.user.isAdmin).toBe(false);
    const refused = await admin.patch('/api/admin/benchmarks/toy-decode', { submissionsOpen: false });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('organizers_only');
  });
});
