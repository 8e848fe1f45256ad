import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveOf } from '../support/archives';
import { ROOT, startTestHub, TestHub } from '../support/hub';
import { ownerWithTeam, signIn, TestUser, withToken } from '../support/users';

/** Issue 33, "code access for organizers": read a submission's files or download it, audited. */
describe('a submission’s code: its team reads it, organizers read any (audited), nobody else', () => {
  let hub: TestHub;
  let organizer: TestUser;
  let alice: TestUser;
  let bob: TestUser;
  let archiveId: string;
  let archiveBytes: Buffer;
  let fileId: string;
  let aliceTeam: { id: string };

  // 600 KiB of text: stored, listed, but past what the code view shows (the download has it)
  const big = 'x = 1\n'.repeat(100 * 1024);
  const bytesOf = (res: { body: unknown }) => res.body as Buffer;
  const binaryParser = (res: NodeJS.ReadableStream, done: (err: Error | null, body: Buffer) => void) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => done(null, Buffer.concat(chunks)));
  };

  beforeAll(async () => {
    hub = await startTestHub({ env: { ADMIN_LOGINS: 'code-organizer' } });
    organizer = await signIn(hub, 'code-organizer');
    ({ owner: alice, team: aliceTeam } = await ownerWithTeam(hub, 'code-alice', 'Readers'));
    ({ owner: bob } = await ownerWithTeam(hub, 'code-bob', 'Other Team'));
    const withData = archiveOf({
      'engine.py': readStarterEngine(),
      'README.md': '# notes\n',
      'big.txt': big,
    });
    const up = await alice.upload(
      '/api/submissions',
      { benchmark: 'toy-decode' },
      { name: 'fast.tar.gz', content: withData },
    );
    expect(up.status).toBe(201);
    archiveId = up.body.submission.id;
    archiveBytes = withData;
    const sample = readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py'));
    const single = await alice.upload(
      '/api/submissions',
      { benchmark: 'deep-recurrence' },
      { name: 'submission.py', content: sample },
    );
    expect(single.status).toBe(201);
    fileId = single.body.submission.id;
  });
  afterAll(async () => hub?.close());

  function readStarterEngine(): string {
    return readFileSync(path.join(ROOT, 'starters/toy-decode/engine/engine.py'), 'utf8');
  }

  const audit = async () =>
    (await organizer.get('/api/admin/audit?target=' + archiveId)).body.items as {
      action: string;
      actor: { login: string };
      target: { kind: string; id: string };
      details: Record<string, unknown>;
    }[];

  it('shows the team its own files, text where it is text, and downloads the bytes as stored, unaudited', async () => {
    const code = await alice.get(`/api/submissions/${archiveId}/code`);
    expect(code.status).toBe(200);
    expect(code.body.audited).toBe(false);
    expect(code.body.submission.id).toBe(archiveId);
    const byPath = Object.fromEntries(code.body.files.map((f: { path: string }) => [f.path, f]));
    expect(byPath['engine.py']).toMatchObject({
      language: 'python',
      omitted: null,
      text: readStarterEngine(),
    });
    expect(byPath['README.md']).toMatchObject({ language: 'markdown', text: '# notes\n' });
    expect(byPath['big.txt']).toMatchObject({
      text: null,
      omitted: 'too_large',
      size: big.length,
      language: 'text',
    });

    const dl = await alice.get(`/api/submissions/${archiveId}/download`).buffer(true).parse(binaryParser);
    expect(dl.status).toBe(200);
    expect(dl.headers['content-type']).toBe('application/gzip');
    expect(dl.headers['content-disposition']).toBe('attachment; filename="fast-1.tar.gz"');
    expect(bytesOf(dl).equals(archiveBytes)).toBe(true);

    const single = await alice.get(`/api/submissions/${fileId}/code`);
    expect(single.body.files).toEqual([
      expect.objectContaining({ path: 'submission.py', language: 'python', omitted: null }),
    ]);
    const file = await alice.get(`/api/submissions/${fileId}/download`).buffer(true).parse(binaryParser);
    expect(file.headers['content-disposition']).toBe('attachment; filename="submission.py"');
    expect(
      bytesOf(file).equals(readFileSync(path.join(ROOT, 'starters/deep-recurrence/submission.py'))),
    ).toBe(true);

    // the team's own token reads it too (scripts, the CLI)
    const token = (await alice.post(`/api/teams/${aliceTeam.id}/tokens`, { name: 'ci' })).body.token;
    expect((await withToken(hub, token).get(`/api/submissions/${archiveId}/code`)).status).toBe(200);
    expect(await audit()).toEqual([]);
  });

  it('refuses another team’s members and tokens as if the submission did not exist', async () => {
    for (const route of ['code', 'download']) {
      const res = await bob.get(`/api/submissions/${archiveId}/${route}`);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('submission_not_found');
    }
    const bobTeam = (await bob.get('/api/me')).body.activeTeamId;
    const token = (await bob.post(`/api/teams/${bobTeam}/tokens`, { name: 'x' })).body.token;
    expect((await withToken(hub, token).get(`/api/submissions/${archiveId}/download`)).status).toBe(404);
    const anonymous = await hub.http.get(`/api/submissions/${archiveId}/code`);
    expect(anonymous.status).toBe(401);
    expect(await audit()).toEqual([]);
  });

  it('lets an organizer read and download any team’s code, each access in the audit log', async () => {
    const code = await organizer.get(`/api/submissions/${archiveId}/code`);
    expect(code.status).toBe(200);
    expect(code.body.audited).toBe(true);
    expect(code.body.files.map((f: { path: string }) => f.path).sort()).toEqual([
      'README.md',
      'big.txt',
      'engine.py',
    ]);
    const dl = await organizer.get(`/api/submissions/${archiveId}/download`).buffer(true).parse(binaryParser);
    expect(dl.status).toBe(200);
    expect(bytesOf(dl).equals(archiveBytes)).toBe(true);
    await organizer.get(`/api/submissions/${archiveId}/code`);

    const entries = await audit();
    expect(entries.map((e) => e.action)).toEqual([
      'submission.view_code',
      'submission.download',
      'submission.view_code',
    ]);
    expect(entries[0]).toMatchObject({
      actor: { login: 'code-organizer' },
      target: { kind: 'submission', id: archiveId },
      details: { teamId: aliceTeam.id, name: 'fast #1' },
    });
  });

  it('answers an unknown or malformed id with what to change', async () => {
    const unknown = await organizer.get('/api/submissions/00000000-0000-4000-8000-000000000000/code');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('submission_not_found');
    const malformed = await alice.get('/api/submissions/7/download');
    expect(malformed.status).toBe(404);
    expect(malformed.body.error.message).toMatch(/ids look like/);
  });
});
