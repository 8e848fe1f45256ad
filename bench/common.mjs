// What the benches share: a database of their own on the test server (or embedded Postgres), and a
// signed-in user speaking the hub's REST API.
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const pg = require('pg');
export const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const { packFolder } = require(path.join(root, 'libs/dist/node.js'));

/** A fresh database named `<prefix>_<stamp>` on DATABASE_URL's server (or an embedded Postgres). */
export async function benchDatabase(prefix, stamp) {
  let server = process.env.DATABASE_URL;
  let stop = async () => {};
  if (!server) {
    const { startEmbeddedPostgres } = require(path.join(root, 'apps/api/dist/database/embedded-postgres.js'));
    const db = await startEmbeddedPostgres(path.join(root, '.data', 'bench-postgres'), undefined, () => {});
    server = db.url;
    stop = db.stop;
  }
  const name = `${prefix}_${stamp}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: server });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
      await stop();
    },
  };
}

/** A table cell: whole numbers from 100 up, one decimal below, text as it is. */
export const fmt = (v) =>
  typeof v === 'number'
    ? Number.isNaN(v)
      ? 'n/a'
      : v >= 100
        ? Math.round(v).toLocaleString('en-US')
        : v.toFixed(1)
    : String(v);

/** a / b as `1.23×`, or nothing when either is not a number. */
export const ratio = (a, b) =>
  typeof a === 'number' && typeof b === 'number' && b > 0 ? `${(a / b).toFixed(2)}×` : '';

export class User {
  constructor(base, cookie, csrf) {
    Object.assign(this, { base, cookie, csrf });
  }
  static async signIn(base, login) {
    const res = await fetch(`${base}/api/auth/dev`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ login }),
    });
    const body = await res.json();
    const cookie = res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    return new User(base, cookie, body.csrfToken);
  }
  async req(method, p, body) {
    const headers = { cookie: this.cookie, 'x-csrf-token': this.csrf };
    if (body && !(body instanceof FormData)) headers['content-type'] = 'application/json';
    const res = await fetch(`${this.base}${p}`, {
      method,
      headers,
      body: body instanceof FormData ? body : body ? JSON.stringify(body) : undefined,
    });
    const json = await res.json();
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  }
  async upload(folder, benchmark = 'toy-decode') {
    const form = new FormData();
    form.append('benchmark', benchmark);
    form.append('file', new Blob([await packFolder(folder)]), 'engine.tar.gz');
    return (await this.req('POST', '/api/submissions', form)).submission.id;
  }
}
