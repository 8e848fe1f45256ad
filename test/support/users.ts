import request from 'supertest';
import type { MeView } from '@dryft/libs';
import type { TestHub } from './hub';

/** A signed-in browser: session cookie plus the CSRF header on every request. */
export class TestUser {
  constructor(
    private readonly hub: TestHub,
    readonly cookie: string,
    readonly csrf: string,
    readonly me: MeView,
  ) {}

  get id(): string {
    return this.me.user.id;
  }

  private with(req: request.Test): request.Test {
    return req.set('Cookie', this.cookie).set('X-CSRF-Token', this.csrf);
  }

  get(path: string) {
    return this.with(this.hub.http.get(path));
  }
  post(path: string, body?: object) {
    return this.with(this.hub.http.post(path)).send(body ?? {});
  }
  put(path: string) {
    return this.with(this.hub.http.put(path));
  }
  patch(path: string, body?: object) {
    return this.with(this.hub.http.patch(path)).send(body ?? {});
  }
  delete(path: string) {
    return this.with(this.hub.http.delete(path));
  }
  upload(path: string, fields: Record<string, string>, file: { name: string; content: Buffer }) {
    let req = this.with(this.hub.http.post(path));
    for (const [k, v] of Object.entries(fields)) req = req.field(k, v);
    return req.attach('file', file.content, file.name);
  }
}

export async function signIn(hub: TestHub, login: string): Promise<TestUser> {
  const res = await hub.http.post('/api/auth/dev').send({ login });
  if (res.status !== 200) throw new Error(`dev sign-in failed: ${res.status} ${JSON.stringify(res.body)}`);
  const cookies = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  const cookie = cookies.map((c) => c.split(';')[0]).join('; ');
  return new TestUser(hub, cookie, res.body.csrfToken, res.body);
}

/** Signs in, creates a team, and returns the owner with the team. */
export async function ownerWithTeam(hub: TestHub, login: string, teamName = `${login} team`) {
  const owner = await signIn(hub, login);
  const res = await owner.post('/api/teams', { name: teamName });
  if (res.status !== 201) throw new Error(`team creation failed: ${JSON.stringify(res.body)}`);
  return { owner, team: res.body as { id: string; inviteCode: string; slug: string; name: string } };
}

/** A bearer-token client for scripts and the CLI's view of the API. */
export function withToken(hub: TestHub, token: string) {
  const auth = (req: request.Test) => req.set('Authorization', `Bearer ${token}`);
  return {
    get: (path: string) => auth(hub.http.get(path)),
    post: (path: string, body?: object) => auth(hub.http.post(path)).send(body ?? {}),
    delete: (path: string) => auth(hub.http.delete(path)),
    upload: (path: string, fields: Record<string, string>, file: { name: string; content: Buffer }) => {
      let req = auth(hub.http.post(path));
      for (const [k, v] of Object.entries(fields)) req = req.field(k, v);
      return req.attach('file', file.content, file.name);
    },
  };
}
