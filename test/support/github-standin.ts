import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GithubAppStandin } from './github-app-standin';

/**
 * A small real HTTP server that plays the parts of GitHub the hub calls: the OAuth authorize
 * redirect, the code-for-token exchange and `GET /user`, and the GitHub App's endpoints
 * (`app`: installations, installation tokens, repositories, commits, tarballs; see
 * github-app-standin.ts).
 */
export interface GithubStandin {
  url: string;
  users: Map<string, { id: number; login: string; name: string | null; avatar_url: string }>;
  requests: { method: string; path: string; auth?: string }[];
  /** The GitHub App side: configure with `app.configure({ appId, publicKey })` before the hub calls it. */
  app: GithubAppStandin;
  close(): Promise<void>;
  /** Extra routes: return true when handled. */
  route(
    handler: (req: IncomingMessage, res: ServerResponse, body: string) => boolean | Promise<boolean>,
  ): void;
}

export async function startGithubStandin(): Promise<GithubStandin> {
  const users = new Map<string, { id: number; login: string; name: string | null; avatar_url: string }>();
  const codes = new Map<string, string>(); // code -> login
  const tokens = new Map<string, string>(); // access token -> login
  const requests: GithubStandin['requests'] = [];
  const extra: Parameters<GithubStandin['route']>[0][] = [];
  const app = new GithubAppStandin();
  let nextCode = 1;
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://x');
    requests.push({ method: req.method ?? 'GET', path: url.pathname, auth: req.headers.authorization });
    for (const h of extra) if (await h(req, res, body)) return;
    if (await app.handle(req, res, url)) return;
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
      // The "user" approves at once: the login to sign in as is chosen by the test with ?login=.
      const login = url.searchParams.get('login') ?? [...users.keys()][0];
      const code = `code-${nextCode++}`;
      codes.set(code, login);
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      res.writeHead(302, { location: back.toString() }).end();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      const params = new URLSearchParams(body);
      const login = codes.get(params.get('code') ?? '');
      if (!login) {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: 'bad_verification_code' }));
        return;
      }
      codes.delete(params.get('code')!);
      const token = `gho_standin_${login}`;
      tokens.set(token, login);
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ access_token: token, token_type: 'bearer', scope: 'read:user' }));
      return;
    }
    if (req.method === 'GET' && url.pathname === '/user') {
      const token = (req.headers.authorization ?? '').replace(/^(token|Bearer)\s+/i, '');
      const login = tokens.get(token);
      if (!login || !users.has(login)) {
        res
          .writeHead(401, { 'content-type': 'application/json' })
          .end(JSON.stringify({ message: 'Bad credentials' }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(users.get(login)));
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'Not Found' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  app.baseUrl = `http://127.0.0.1:${port}`;
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    users,
    requests,
    route: (h) => extra.push(h),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // The hub keeps connections alive (undici); they must not hold the close.
        server.closeAllConnections();
      }),
  };
}
