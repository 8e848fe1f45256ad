// gpu-smoke's side of the hub's REST API, through the product's client (apps/cli's ApiClient, the
// one `dryft` uses) and the zod views of libs: an organizer's session for the admin routes, the
// team's API token for submissions and runs, as a participant would.
import { z } from 'zod';
import {
  AgentView,
  CancelRunResponse,
  CreatedAgentView,
  CreatedTokenView,
  CreateRunResponse,
  LeaderboardView,
  MeView,
  RunResultView,
  TeamDetail,
  UploadResponse,
} from '@dryft/libs';
import { packFiles } from '@dryft/libs/node';
import { ApiClient, multipart } from '../../apps/cli/dist/http.js';

/** GETs are retried as the CLI retries them; a rate-limit wait is waited out without a notice. */
const client = (url, token, source) => new ApiClient(url, token, source, 400, () => undefined);
/** How long one request may go without an answer: as long as fetch waited, before this client. */
const TIMEOUT_MS = 300_000;

/** An organizer's browser session (dev sign-in): its cookie and CSRF token on every call. */
export class OrganizerSession {
  constructor(api, cookie, csrf) {
    this.api = api;
    this.headers = { cookie, 'x-csrf-token': csrf };
  }

  /** `POST /api/auth/dev` (the hub runs with NODE_ENV=development, the login in ADMIN_LOGINS). */
  static async signIn(url, login) {
    const api = client(url, undefined, 'the dev sign-in');
    const res = await api.raw('/api/auth/dev', {
      method: 'POST',
      json: { login },
      anonymous: true,
      timeoutMs: TIMEOUT_MS,
    });
    if (res.status !== 200) throw new Error(`dev sign-in: ${res.status} ${res.body.toString('utf8')}`);
    const me = api.parse(MeView, res);
    const cookies = res.headers['set-cookie'] ?? [];
    return new OrganizerSession(api, cookies.map((c) => c.split(';')[0]).join('; '), me.csrfToken);
  }

  call(schema, path, opts = {}) {
    return this.api.call(schema, path, {
      timeoutMs: TIMEOUT_MS,
      ...opts,
      headers: { ...this.headers, ...opts.headers },
    });
  }

  createAgent(name) {
    return this.call(CreatedAgentView, '/api/admin/agents', { method: 'POST', json: { name } });
  }

  agents() {
    return this.call(z.array(AgentView), '/api/admin/agents');
  }

  /** A team of the organizer's and an API token of that team's. */
  async teamToken(teamName, tokenName) {
    const team = await this.call(TeamDetail, '/api/teams', { method: 'POST', json: { name: teamName } });
    const token = await this.call(CreatedTokenView, `/api/teams/${team.id}/tokens`, {
      method: 'POST',
      json: { name: tokenName },
    });
    return token.token;
  }
}

/** A team's API token: what a participant's `dryft` does. */
export class Participant {
  constructor(url, token) {
    this.token = token;
    this.api = client(url, token, 'the gpu-smoke team token');
  }

  /** Packs FILES ({name, content}) as NAME.tar.gz and submits them to BENCHID; the submission's id. */
  upload(benchId, name, files) {
    const file = {
      field: 'file',
      name: `${name}.tar.gz`,
      content: packFiles(files),
      type: 'application/gzip',
    };
    return this.submit(benchId, file, name);
  }

  /** Submits CONTENT as the single file NAME (a training benchmark's submission.py); the submission's id. */
  uploadFile(benchId, name, content, label = name) {
    return this.submit(benchId, { field: 'file', name, content, type: 'text/x-python' }, label);
  }

  /** `POST /api/submissions` of one multipart FILE to BENCHID; LABEL names it in an error. */
  async submit(benchId, file, label) {
    const { body, contentType } = multipart({ benchmark: benchId }, file);
    const res = await this.api.raw('/api/submissions', {
      method: 'POST',
      body,
      headers: { 'content-type': contentType },
      timeoutMs: TIMEOUT_MS,
    });
    if (res.status !== 201)
      throw new Error(`upload ${label}: ${res.status} ${res.body.toString('utf8').slice(0, 800)}`);
    return this.api.parse(UploadResponse, res).submission.id;
  }

  /**
   * Starts a run of the submission (an official one confirmed); the run's id. CHOICE: a training
   * benchmark's tier and practice dataset ({ tier, dataset }).
   */
  async startRun(submissionId, mode, choice = {}) {
    const res = await this.api.raw(`/api/submissions/${submissionId}/runs`, {
      method: 'POST',
      json: { ...(mode === 'official' ? { mode, confirm: true } : { mode }), ...choice },
      timeoutMs: TIMEOUT_MS,
    });
    if (res.status !== 201)
      throw new Error(`run ${mode}: ${res.status} ${res.body.toString('utf8').slice(0, 800)}`);
    return this.api.parse(CreateRunResponse, res).run.id;
  }

  /** The run's result; {} when it has none (a run that failed before its harness answered). */
  async result(runId) {
    const res = await this.api.raw(`/api/runs/${runId}/result`, { timeoutMs: TIMEOUT_MS });
    return res.status === 200 ? this.api.parse(RunResultView, res) : {};
  }

  /** `POST /api/runs/:id/cancel`; the HTTP status (the run's end is followed separately). */
  async cancel(runId, reason) {
    const res = await this.api.raw(`/api/runs/${runId}/cancel`, {
      method: 'POST',
      json: { reason },
      timeoutMs: TIMEOUT_MS,
    });
    if (res.status < 300) this.api.parse(CancelRunResponse, res);
    return res.status;
  }

  /** The benchmark's live leaderboard (`GET /api/leaderboards/:id`). */
  leaderboard(benchId) {
    return this.api.call(LeaderboardView, `/api/leaderboards/${encodeURIComponent(benchId)}`, {
      timeoutMs: TIMEOUT_MS,
    });
  }
}
