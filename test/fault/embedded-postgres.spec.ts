import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiProc, HttpUser, startApi, stopProc, until } from '../support/agent-helpers';
import { freePort, ROOT } from '../support/quickstart';

/**
 * The hub on its embedded Postgres (no DATABASE_URL, a data folder of its own), as `npm start` runs
 * it: a `kill -9` of the API, a restart, a data folder from before per-install passwords, a broken
 * Postgres configuration. Real processes throughout.
 */
describe('embedded Postgres: crash recovery and who can reach it', () => {
  let dataDir: string;
  let port: number;
  let api: ApiProc | undefined;

  const databaseDir = () => path.join(dataDir, 'postgres');
  const postmaster = () => {
    const file = path.join(databaseDir(), 'postmaster.pid');
    if (!existsSync(file)) return null;
    const lines = readFileSync(file, 'utf8').split('\n');
    return { pid: Number(lines[0]), port: Number(lines[3]), socketDir: lines[4], listen: lines[5] };
  };
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const boot = async () => (api = await startApi({ port, dataDir, env: { LOG_LEVEL: 'log' } }));
  const password = () => readFileSync(path.join(dataDir, 'postgres.password'), 'utf8').trim();
  /** A login as the hub's database user over the socket in the data folder. */
  const login = async (pw: string) => {
    const pm = postmaster()!;
    const client = new Client({
      host: pm.socketDir,
      port: pm.port,
      user: 'dryft',
      password: pw,
      database: 'dryft',
    });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return 'ok';
    } catch (err) {
      return (err as { code?: string }).code ?? (err as Error).message;
    } finally {
      await client.end().catch(() => undefined);
    }
  };

  beforeAll(async () => {
    dataDir = path.join(ROOT, '.data', 'test', `fault-embedded-${process.pid}-${Date.now()}`);
    mkdirSync(dataDir, { recursive: true });
    port = await freePort();
  });

  afterAll(async () => {
    await stopProc(api);
    // Never leave a Postgres behind, whatever failed above.
    const pm = dataDir ? postmaster() : null;
    if (pm && alive(pm.pid)) process.kill(pm.pid, 'SIGQUIT');
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('comes back after kill -9 of the API: the leftover Postgres is stopped, the data is intact', async () => {
    await boot();
    const owner = await HttpUser.signIn(api!.url, 'crash-owner');
    const team = await owner.createTeam('Crash team');
    const before = postmaster()!;
    expect(alive(before.pid)).toBe(true);

    api!.child.kill('SIGKILL');
    await api!.exited;
    // The fault as it happens: the API is gone, its Postgres keeps running on the data folder.
    expect(alive(before.pid)).toBe(true);

    const started = Date.now();
    await boot();
    const recoveryMs = Date.now() - started;
    console.log(`[fault] API back after kill -9 in ${recoveryMs} ms (leftover Postgres stopped first)`);
    expect(api!.output()).toMatch(/left running on .* by a hub that stopped without shutting it down/);
    expect(alive(before.pid)).toBe(false);
    expect(postmaster()!.pid).not.toBe(before.pid);
    // Same data: the session, the user and the team survived.
    const teams = await owner.get<{ id: string; name: string }[]>('/api/teams');
    expect(teams.status).toBe(200);
    expect(JSON.stringify(teams.body)).toContain(team.id);
    expect(JSON.stringify(teams.body)).toContain('Crash team');
  });

  it('listens only on a socket inside the data folder, with a per-install password; the old constant one is refused', async () => {
    const pm = postmaster()!;
    expect(pm.socketDir).toBe(path.join(dataDir, 'postgres-socket'));
    expect(pm.listen.trim()).toBe(''); // no TCP at all
    expect(statSync(pm.socketDir).mode & 0o777).toBe(0o700);
    expect(existsSync(path.join(pm.socketDir, `.s.PGSQL.${pm.port}`))).toBe(true);
    expect(readdirSync('/tmp').filter((f) => f.startsWith(`.s.PGSQL.${pm.port}`))).toEqual([]);

    const file = path.join(dataDir, 'postgres.password');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(password()).not.toBe('dryft');
    expect(password()).toMatch(/^[0-9a-f]{32}$/);

    expect(await login('dryft')).toBe('28P01'); // invalid_password
    expect(await login(password())).toBe('ok');
    // Nor by TCP on loopback, with any password.
    const tcp = new Client({ host: '127.0.0.1', port: pm.port, user: 'dryft', password: 'dryft' });
    await expect(tcp.connect()).rejects.toThrow(/ECONNREFUSED/);
    await tcp.end().catch(() => undefined);
  });

  it('changes the old constant password of a data folder made by an earlier version on its first start', async () => {
    // Make this data folder look like one from before per-install passwords.
    const pm = postmaster()!;
    const admin = new Client({
      host: pm.socketDir,
      port: pm.port,
      user: 'dryft',
      password: password(),
      database: 'dryft',
    });
    await admin.connect();
    await admin.query(`ALTER ROLE dryft WITH PASSWORD 'dryft'`);
    await admin.end();
    await stopProc(api);
    rmSync(path.join(dataDir, 'postgres.password'));

    await boot();
    expect(api!.output()).toMatch(/replaced the old constant password/);
    expect(statSync(path.join(dataDir, 'postgres.password')).mode & 0o777).toBe(0o600);
    expect(await login('dryft')).toBe('28P01');
    expect(await login(password())).toBe('ok');
    const owner = await HttpUser.signIn(api!.url, 'crash-owner');
    expect(JSON.stringify((await owner.get('/api/teams')).body)).toContain('Crash team');
  });

  it('says why when its Postgres cannot start, never `undefined`', async () => {
    await stopProc(api);
    const conf = path.join(databaseDir(), 'postgresql.conf');
    const original = readFileSync(conf, 'utf8');
    appendFileSync(conf, `\nshared_buffers = 'a lot'\n`);
    try {
      // startApi throws with everything the API printed before it exited.
      const failure = await boot().then(
        () => new Error('the API started on a broken Postgres configuration'),
        (err: Error) => err,
      );
      expect(failure.message).toMatch(/the API exited \(1\)/);
      expect(failure.message).toMatch(/The hub could not start: Embedded Postgres stopped while starting/);
      expect(failure.message).toMatch(/invalid value for parameter "shared_buffers"/);
      expect(failure.message).not.toMatch(/^undefined$/m);
    } finally {
      // Put the configuration back (writing keeps the file's owner, the postgres user).
      writeFileSync(conf, original);
    }
    await boot();
    expect((await fetch(`${api!.url}/api/health`)).status).toBe(200);
  });

  it('starts its Postgres again when it dies under the running hub; meanwhile routes answer 503', async () => {
    const owner = await HttpUser.signIn(api!.url, 'crash-owner');
    const before = postmaster()!;
    process.kill(before.pid, 'SIGKILL');
    const killedAt = Date.now();
    const during = await owner.get<{ error: { code: string } }>('/api/teams');
    expect([503, 200]).toContain(during.status); // 200 only if it was already back
    if (during.status === 503) expect(during.body.error.code).toBe('database_unavailable');
    await until(
      'Postgres restarted by the hub',
      async () => {
        const pm = postmaster();
        return (
          (pm && pm.pid !== before.pid && alive(pm.pid) && (await owner.get('/api/teams')).status === 200) ||
          null
        );
      },
      60_000,
    );
    console.log(
      `[fault] embedded Postgres killed under the hub: serving again after ${Date.now() - killedAt} ms`,
    );
    expect(api!.output()).toMatch(/Embedded Postgres stopped unexpectedly/);
    expect(api!.child.exitCode).toBeNull();
    expect(JSON.stringify((await owner.get('/api/teams')).body)).toContain('Crash team');
  });

  it('retries a restart that fails before Postgres is ready, with backoff, until it comes back', async () => {
    if (!api) await boot();
    const owner = await HttpUser.signIn(api!.url, 'retry-owner');
    const conf = path.join(databaseDir(), 'postgresql.conf');
    const original = readFileSync(conf, 'utf8');
    const before = postmaster()!;
    // The restart will fail before Postgres is ready (as a killed-again or a "shared memory block is
    // still in use" start does): a configuration it refuses, put back a few seconds later.
    appendFileSync(conf, `\nshared_buffers = 'a lot'\n`);
    const outputBefore = api!.output().length;
    try {
      process.kill(before.pid, 'SIGKILL');
      await until(
        'the first restart failing',
        () => /Embedded Postgres stopped while starting/.test(api!.output().slice(outputBefore)) || null,
        30_000,
      );
      expect((await owner.get('/api/teams')).status).toBe(503);
    } finally {
      writeFileSync(conf, original);
    }
    const fixedAt = Date.now();
    await until(
      'Postgres back after a failed restart',
      async () =>
        ((await owner.get('/api/teams')).status === 200 && postmaster()?.pid !== before.pid) || null,
      60_000,
    );
    console.log(
      `[fault] embedded Postgres restart failed once: serving again ${Date.now() - fixedAt} ms after the fix`,
    );
    const said = api!.output().slice(outputBefore);
    expect(said).toMatch(/Embedded Postgres could not be started again; starting it again in \d+ s/);
    expect(said).toMatch(/Embedded Postgres is back/);
    expect(api!.child.exitCode).toBeNull();
  });
});
