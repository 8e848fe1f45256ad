import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGithubStandin, GithubStandin } from '../support/github-standin';
import { startTestHub, TestHub } from '../support/hub';
import { signIn } from '../support/users';

function cookiesOf(res: { headers: Record<string, unknown> }): string[] {
  return ([] as string[]).concat((res.headers['set-cookie'] as string[]) ?? []);
}

describe('GitHub OAuth against a local stand-in', () => {
  let github: GithubStandin;
  let hub: TestHub;

  beforeAll(async () => {
    github = await startGithubStandin();
    github.users.set('octocat', {
      id: 583231,
      login: 'octocat',
      name: 'The Octocat',
      avatar_url: 'https://avatars.example/u/583231',
    });
    hub = await startTestHub({
      env: {
        GITHUB_CLIENT_ID: 'Iv1.test',
        GITHUB_CLIENT_SECRET: 'secret',
        GITHUB_WEB_URL: github.url,
        GITHUB_API_URL: github.url,
        PUBLIC_URL: 'http://127.0.0.1:9',
        ADMIN_LOGINS: 'octocat',
      },
    });
  });
  afterAll(async () => {
    await hub?.close();
    await github?.close();
  });

  it('runs the whole dance and creates a signed-in user', async () => {
    const start = await hub.http.get('/api/auth/github');
    expect(start.status).toBe(302);
    const authorize = new URL(start.headers.location);
    expect(authorize.origin).toBe(github.url);
    expect(authorize.pathname).toBe('/login/oauth/authorize');
    const stateCookie = cookiesOf(start).find((c) => c.startsWith('dryft_oauth_state='))!;
    expect(stateCookie).toMatch(/HttpOnly/i);

    authorize.searchParams.set('login', 'octocat');
    const approve = await fetch(authorize, { redirect: 'manual' });
    const callback = new URL(approve.headers.get('location')!);
    expect(callback.pathname).toBe('/api/auth/github/callback');

    const done = await hub.http
      .get(callback.pathname + callback.search)
      .set('Cookie', stateCookie.split(';')[0]);
    expect(done.status).toBe(302);
    expect(done.headers.location).toBe('/');
    const session = cookiesOf(done).find((c) => c.startsWith('dryft_session='))!;
    expect(session).toMatch(/HttpOnly/i);
    expect(session).toMatch(/SameSite=Lax/i);

    const me = await hub.http.get('/api/me').set('Cookie', session.split(';')[0]);
    expect(me.status).toBe(200);
    expect(me.body.user).toMatchObject({ login: 'octocat', name: 'The Octocat', isAdmin: true });
    expect(github.requests.some((r) => r.path === '/user' && r.auth?.includes('gho_standin_octocat'))).toBe(
      true,
    );
  });

  it('refuses a callback whose state did not come from this browser', async () => {
    const start = await hub.http.get('/api/auth/github');
    const authorize = new URL(start.headers.location);
    const approve = await fetch(authorize, { redirect: 'manual' });
    const callback = new URL(approve.headers.get('location')!);
    const res = await hub.http.get(callback.pathname + callback.search); // no state cookie
    expect(res.status).toBe(401);
    expect(cookiesOf(res).some((c) => c.startsWith('dryft_session='))).toBe(false);
  });

  it('has no dev sign-in when GitHub is configured', async () => {
    const res = await hub.http.post('/api/auth/dev').send({ login: 'mallory' });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('dev_sign_in_disabled');
  });
});

describe('sessions, dev sign-in and CSRF', () => {
  let hub: TestHub;
  beforeAll(async () => {
    hub = await startTestHub();
  });
  afterAll(async () => hub?.close());

  it('reports which sign-in methods exist', async () => {
    const res = await hub.http.get('/api/auth/config');
    expect(res.body).toEqual({ github: false, dev: true });
  });

  it('refuses GitHub sign-in with a clear message when unconfigured', async () => {
    const res = await hub.http.get('/api/auth/github');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('github_sign_in_unconfigured');
  });

  it('validates the dev login', async () => {
    const res = await hub.http.post('/api/auth/dev').send({ login: 'no spaces allowed' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request' });
    expect(res.body.error.message).toMatch(/login/);
  });

  it('requires sign-in for private routes', async () => {
    const res = await hub.http.get('/api/me');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('sign_in_required');
  });

  it('refuses a state-changing request without the CSRF header', async () => {
    const alice = await signIn(hub, 'csrf-alice');
    const res = await hub.http.post('/api/teams').set('Cookie', alice.cookie).send({ name: 'No header' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('csrf_failed');
    const wrong = await hub.http
      .post('/api/teams')
      .set('Cookie', alice.cookie)
      .set('X-CSRF-Token', 'x'.repeat(alice.csrf.length))
      .send({ name: 'Wrong' });
    expect(wrong.status).toBe(403);
  });

  it('signs out', async () => {
    const bob = await signIn(hub, 'logout-bob');
    expect((await bob.post('/api/auth/logout')).status).toBe(200);
    expect((await bob.get('/api/me')).status).toBe(401);
  });

  it('answers unknown routes and bad JSON with the error shape', async () => {
    const missing = await hub.http.get('/api/does-not-exist');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    const alice = await signIn(hub, 'json-alice');
    const bad = await hub.http
      .post('/api/teams')
      .set('Cookie', alice.cookie)
      .set('X-CSRF-Token', alice.csrf)
      .set('Content-Type', 'application/json')
      .send('{nope');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_json');
  });

  it('serves health with the database state', async () => {
    const res = await hub.http.get('/api/health');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', db: 'up' });
    expect(typeof res.body.version).toBe('string');
  });
});
