import { Inject, Injectable } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { isGithubId } from '@dryft/libs';
import type { GithubStatus, GrantedRepositories, RunView } from '@dryft/libs';
import { BenchmarksService } from '../benchmarks/benchmarks.service';
import { Clock } from '../common/clock';
import { Jobs } from '../common/jobs';
import { AppError, badRequest, conflict, forbidden, notFound, unprocessable } from '../common/errors';
import type { Principal } from '../common/principal';
import { CONFIG, Config } from '../config/config';
import { RunViews } from '../runs/run-views';
import { TeamsService } from '../teams/teams.service';
import { UsersService } from '../users/users.service';
import { DELIVERY_QUEUE } from './delivery-queue';
import { DeliveryProcessor, RunNowPayload } from './delivery-processor.service';
import type { ConnectionView, DeliveryView } from './dto';
import { normalizeEngineFolder } from './engine-folder';
import { GithubDeliveryEntity } from './github-delivery.entity';
import { Evaluation, RepositoryConnectionEntity } from './repository-connection.entity';
import { GithubClient, GithubError, GithubRepository as GithubRepo } from './github-client';
import { githubAppSettings, missingGithubAppSettings, unconfiguredMessage } from './github-settings';
import { GithubRepository } from './github.repository';

const STATE_TTL_MS = 15 * 60_000;

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * Connecting repositories to teams through the GitHub App, their settings, "Run now" and
 * "Check delivery". An installation belongs to the team whose owner or admin installed it; a
 * repository connects to at most one team.
 */
@Injectable()
export class GithubService {
  constructor(
    private readonly repo: GithubRepository,
    private readonly client: GithubClient,
    private readonly jobs: Jobs,
    private readonly processor: DeliveryProcessor,
    private readonly teams: TeamsService,
    private readonly users: UsersService,
    private readonly benchmarks: BenchmarksService,
    private readonly runs: RunViews,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  status(): GithubStatus {
    const missing = missingGithubAppSettings(this.config);
    if (missing.length) return { configured: false, message: unconfiguredMessage(missing), missing };
    const s = githubAppSettings(this.config);
    return { configured: true, appSlug: s.slug, appUrl: `${s.webUrl}/apps/${s.slug}`, webUrl: s.webUrl };
  }

  // Installing -----------------------------------------------------------------------------------

  /** The GitHub install URL with a one-use state bound to this team and this person. */
  async installUrl(principal: Principal, teamId: string | undefined): Promise<string> {
    const s = githubAppSettings(this.config);
    const team = teamId ?? this.teams.requireActiveTeam(principal);
    await this.teams.authorize(principal, team, 'manage_repositories');
    const state = randomBytes(32).toString('base64url');
    await this.repo.saveState({
      stateHash: sha256(state),
      teamId: team,
      userId: principal.user.id,
      expiresAt: new Date(this.clock.now().getTime() + STATE_TTL_MS),
    });
    return `${s.webUrl}/apps/${encodeURIComponent(s.slug)}/installations/new?state=${encodeURIComponent(state)}`;
  }

  /**
   * GitHub's setup callback. The installation goes to the team that started the flow (the state,
   * spent here), never to a team that merely knows its id; one already bound elsewhere is refused.
   */
  async setup(
    principal: Principal,
    query: { installation_id?: string; setup_action?: string; state?: string },
  ) {
    githubAppSettings(this.config);
    if (query.setup_action === 'request') {
      return {
        pending: true,
        message:
          'The installation was requested: a GitHub organization owner must approve it, then connect the repository again.',
      };
    }
    const installationId = query.installation_id ?? '';
    if (!isGithubId(installationId))
      throw badRequest(
        'installation_id_required',
        'The setup callback needs a numeric installation_id; start again from Repositories → Connect a repository.',
      );
    let teamId: string;
    if (query.state) {
      const state = await this.repo.spendState(sha256(query.state), this.clock.now());
      if (!state) {
        throw badRequest(
          'install_state_invalid',
          'This install link expired or was already used; start again from Repositories → Connect a repository.',
        );
      }
      if (state.userId !== principal.user.id) {
        throw forbidden(
          'install_state_mismatch',
          'This install link was started by someone else; start the installation yourself from Repositories.',
        );
      }
      teamId = state.teamId;
    } else {
      // GitHub sends no state when the installation is configured from GitHub's side ("update").
      const existing = await this.repo.findInstallation(installationId);
      if (!existing || !(await this.teams.isMember(existing.teamId, principal.user.id))) {
        throw badRequest(
          'install_state_invalid',
          'The setup callback came without a state; start the installation from Repositories → Connect a repository.',
        );
      }
      teamId = existing.teamId;
    }
    await this.teams.authorize(principal, teamId, 'manage_repositories');
    const info = await this.client.getInstallation(installationId).catch((err) => {
      if (err instanceof GithubError && err.status === 404) {
        throw notFound(
          'installation_not_found',
          `GitHub has no installation ${installationId} of this app; install it again from Repositories.`,
        );
      }
      throw err;
    });
    // A personal account can be installed on only by its owner: a mismatch means a forged id.
    if (
      info.accountType === 'User' &&
      principal.user.githubId &&
      info.accountId &&
      info.accountId !== String(principal.user.githubId)
    ) {
      throw forbidden(
        'installation_not_yours',
        `Installation ${installationId} is on the GitHub account ${info.accountLogin}, not yours; install the app on your own account or organization.`,
      );
    }
    const bound = await this.repo.bindInstallation({
      installationId,
      teamId,
      accountLogin: info.accountLogin,
      accountType: info.accountType,
      installedBy: principal.user.id,
    });
    if (bound.teamId !== teamId) {
      throw conflict(
        'installation_taken',
        `The GitHub App installation on ${info.accountLogin} already belongs to another team. An installation belongs to the team that installed it: ask that team to disconnect, or install the app on another account.`,
      );
    }
    return {
      installationId,
      teamId,
      account: info.accountLogin,
      accountType: info.accountType,
      setupAction: query.setup_action ?? 'install',
    };
  }

  // Repositories the App can see ---------------------------------------------------------------

  async githubRepositories(principal: Principal, teamId: string): Promise<GrantedRepositories> {
    githubAppSettings(this.config);
    await this.teams.authorize(principal, teamId, 'manage_repositories');
    const installations = await this.repo.listInstallations(teamId);
    const repositories: (GithubRepo & {
      installationId: string;
      connectionId: string | null;
      connectedElsewhere: boolean;
    })[] = [];
    for (const inst of installations) {
      for (const r of await this.listGranted(inst.installationId)) {
        const conn = await this.repo.findConnectionByRepository(r.id);
        repositories.push({
          ...r,
          installationId: inst.installationId,
          connectionId: conn?.teamId === teamId ? conn.id : null,
          connectedElsewhere: Boolean(conn && conn.teamId !== teamId),
        });
      }
    }
    return {
      installations: installations.map((i) => ({
        installationId: i.installationId,
        account: i.accountLogin,
        accountType: i.accountType,
        createdAt: i.createdAt.toISOString(),
      })),
      repositories,
    };
  }

  private async listGranted(installationId: string): Promise<GithubRepo[]> {
    try {
      return await this.client.listRepositories(installationId);
    } catch (err) {
      if (err instanceof GithubError) {
        throw new AppError(
          502,
          'installation_unavailable',
          `GitHub refused access through installation ${installationId} (${err.message}). If the app was uninstalled, install it again from Repositories.`,
        );
      }
      throw err;
    }
  }

  // Connections ------------------------------------------------------------------------------------

  async listConnections(principal: Principal, teamId: string): Promise<ConnectionView[]> {
    githubAppSettings(this.config);
    await this.teams.authorize(principal, teamId, 'read');
    const rows = await this.repo.listConnections(teamId);
    return Promise.all(rows.map((c) => this.connectionView(c)));
  }

  async getConnection(principal: Principal, teamId: string, connectionId: string): Promise<ConnectionView> {
    githubAppSettings(this.config);
    await this.teams.authorize(principal, teamId, 'read');
    return this.connectionView(await this.connectionOf(teamId, connectionId));
  }

  /** Connecting starts no run: the first run is a push to the default branch, or Run now. */
  async connect(
    principal: Principal,
    teamId: string,
    body: {
      installationId?: string;
      repositoryId?: string;
      fullName?: string;
      engineFolder: string;
      benchmark: string;
    },
  ): Promise<ConnectionView> {
    githubAppSettings(this.config);
    await this.teams.authorize(principal, teamId, 'manage_repositories');
    const benchmark = await this.benchmarks.get(body.benchmark);
    if (benchmark.kind !== 'decode') {
      throw unprocessable(
        'benchmark_not_connectable',
        `${benchmark.id} takes a single file, not an engine folder; submit it in the browser or with the CLI. Connect repositories to a decode benchmark.`,
      );
    }
    const engineFolder = this.folder(body.engineFolder);
    const installations = await this.repo.listInstallations(teamId);
    let candidates = installations;
    if (body.installationId) {
      candidates = installations.filter((i) => i.installationId === body.installationId);
      if (candidates.length === 0) {
        throw notFound(
          'installation_not_found',
          `Installation ${body.installationId} does not belong to this team. Install the GitHub App from Repositories → Connect a repository; an installation belongs to the team that installed it.`,
        );
      }
    }
    if (candidates.length === 0) {
      throw conflict(
        'github_app_not_installed',
        'This team has not installed the GitHub App yet: an owner or admin opens Repositories → Connect a repository (GET /api/github/install).',
      );
    }
    const wanted = body.repositoryId ?? body.fullName!.toLowerCase();
    let found: { repo: GithubRepo; installationId: string } | undefined;
    for (const inst of candidates) {
      const repo = (await this.listGranted(inst.installationId)).find(
        (r) => r.id === wanted || r.fullName.toLowerCase() === wanted,
      );
      if (repo) {
        found = { repo, installationId: inst.installationId };
        break;
      }
    }
    if (!found) {
      const where = candidates.map((i) => i.accountLogin).join(', ');
      throw notFound(
        'repository_not_granted',
        `${body.fullName ?? `Repository ${body.repositoryId}`} is not among the repositories the GitHub App can access (installed on ${where}). On GitHub, configure the app, choose “Only select repositories” and grant your copy of the starter; then refresh the list.`,
      );
    }
    const existing = await this.repo.findConnectionByRepository(found.repo.id);
    if (existing) throw this.taken(existing, teamId, found.repo.fullName);
    const created = await this.repo.insertConnection({
      teamId,
      installationId: found.installationId,
      githubRepositoryId: found.repo.id,
      fullName: found.repo.fullName,
      defaultBranch: found.repo.defaultBranch,
      engineFolder,
      benchmarkId: benchmark.id,
      autoRun: true,
      evaluation: 'public',
      connectedBy: principal.user.id,
    });
    if (!created) {
      const now = await this.repo.findConnectionByRepository(found.repo.id);
      throw this.taken(now, teamId, found.repo.fullName);
    }
    return this.connectionView(created);
  }

  async update(
    principal: Principal,
    teamId: string,
    connectionId: string,
    body: { autoRun?: boolean; evaluation?: Evaluation; engineFolder?: string },
  ): Promise<ConnectionView> {
    githubAppSettings(this.config);
    await this.teams.authorize(principal, teamId, 'manage_repositories');
    const conn = await this.connectionOf(teamId, connectionId);
    const patch: Partial<RepositoryConnectionEntity> = {};
    if (body.autoRun !== undefined) patch.autoRun = body.autoRun;
    if (body.evaluation !== undefined) patch.evaluation = body.evaluation;
    if (body.engineFolder !== undefined) patch.engineFolder = this.folder(body.engineFolder);
    await this.repo.updateConnection(conn.id, patch);
    return this.connectionView((await this.repo.findConnection(conn.id))!);
  }

  async disconnect(principal: Principal, teamId: string, connectionId: string) {
    githubAppSettings(this.config);
    await this.teams.authorize(principal, teamId, 'manage_repositories');
    const conn = await this.connectionOf(teamId, connectionId);
    await this.repo.deleteConnections([conn.id]);
    return {
      disconnected: true,
      id: conn.id,
      fullName: conn.fullName,
      message: `${conn.fullName} is disconnected; its submissions and runs stay. Uninstall or reconfigure the GitHub App on GitHub to revoke its access.`,
    };
  }

  // Run now ----------------------------------------------------------------------------------------

  /**
   * Submits the default branch's latest commit once, without changing the push settings. Any member
   * may. With an Idempotency-Key, a retry answers with the first outcome instead of submitting again.
   */
  async runNow(
    principal: Principal,
    teamId: string,
    connectionId: string,
    body: { mode?: Evaluation; confirm?: boolean },
    idempotencyKey?: string,
  ) {
    githubAppSettings(this.config);
    await this.teams.authorize(principal, teamId, 'run');
    const conn = await this.connectionOf(teamId, connectionId);
    const mode = body.mode ?? 'public';
    if (mode === 'official' && body.confirm !== true) {
      throw badRequest(
        'confirmation_required',
        'Official runs count toward the leaderboard: send "confirm": true to start one.',
      );
    }
    if (idempotencyKey !== undefined && !/^[\x21-\x7e]{1,200}$/.test(idempotencyKey)) {
      throw badRequest(
        'invalid_idempotency_key',
        'Idempotency-Key must be 1–200 visible ASCII characters (a UUID is ideal).',
      );
    }
    const guid = idempotencyKey ? `run-now:${conn.id}:${idempotencyKey}` : null;
    if (guid) {
      const previous = await this.repo.findDeliveryByGuid(guid);
      if (previous && previous.status !== 'failed') return this.runNowAnswer(previous, true);
    }
    const head = await this.headOf(conn);
    const payload: RunNowPayload = { kind: 'run_now', sha: head.sha, branch: head.branch, mode };
    const row: Partial<GithubDeliveryEntity> = {
      guid,
      event: 'run_now',
      action: mode,
      status: 'queued',
      teamId,
      connectionId: conn.id,
      installationId: conn.installationId,
      githubRepositoryId: conn.githubRepositoryId,
      repositoryFullName: conn.fullName,
      ref: `refs/heads/${head.branch}`,
      commitSha: head.sha,
      requestedBy: principal.user.id,
      payload,
    };
    let delivery = guid ? await this.repo.insertDeliveryOnce(row) : await this.repo.insertDelivery(row);
    delivery ??= await this.repo.findDeliveryByGuid(guid!); // a failed earlier attempt with this key: process it again
    const outcome = await this.processor.process(delivery!.id);
    if (!outcome)
      throw conflict(
        'run_now_in_flight',
        'This Run now is still being processed; retry in a moment with the same Idempotency-Key.',
      );
    if (outcome.status === 'failed' && outcome.error) throw outcome.error;
    return this.runNowAnswer((await this.repo.findDelivery(delivery!.id))!, false);
  }

  private async runNowAnswer(
    d: GithubDeliveryEntity,
    replayed: boolean,
  ): Promise<{ delivery: DeliveryView; run: RunView | null; replayed: boolean }> {
    return { delivery: deliveryView(d), run: d.runId ? await this.runs.viewById(d.runId) : null, replayed };
  }

  private async headOf(conn: RepositoryConnectionEntity): Promise<{ sha: string; branch: string }> {
    try {
      const repo = await this.client.getRepository(conn.installationId, conn.fullName);
      if (repo.defaultBranch !== conn.defaultBranch || repo.fullName !== conn.fullName) {
        await this.repo.updateConnection(conn.id, {
          defaultBranch: repo.defaultBranch,
          fullName: repo.fullName,
        });
      }
      return {
        sha: await this.client.branchHead(conn.installationId, repo.fullName, repo.defaultBranch),
        branch: repo.defaultBranch,
      };
    } catch (err) {
      if (err instanceof GithubError) {
        throw new AppError(
          err.status === 404 ? 404 : 502,
          'github_error',
          `${err.message}. Check that the GitHub App still has access to ${conn.fullName}.`,
        );
      }
      throw err;
    }
  }

  // Check delivery -------------------------------------------------------------------------------

  async deliveries(
    principal: Principal,
    teamId: string,
    connectionId: string,
    limit: number,
  ): Promise<{ items: DeliveryView[] }> {
    githubAppSettings(this.config);
    await this.teams.authorize(principal, teamId, 'manage_repositories');
    const conn = await this.connectionOf(teamId, connectionId);
    return { items: (await this.repo.listDeliveries(conn.id, limit)).map(deliveryView) };
  }

  /** Processes a failed delivery again, in the background (as the webhook would). */
  async redeliver(
    principal: Principal,
    teamId: string,
    connectionId: string,
    deliveryId: string,
  ): Promise<DeliveryView> {
    githubAppSettings(this.config);
    await this.teams.authorize(principal, teamId, 'manage_repositories');
    const conn = await this.connectionOf(teamId, connectionId);
    const d = await this.repo.findDelivery(deliveryId);
    if (!d || d.connectionId !== conn.id)
      throw notFound(
        'delivery_not_found',
        `No delivery ${deliveryId} for ${conn.fullName}; list them with GET …/deliveries.`,
      );
    if (d.status !== 'failed') {
      throw conflict(
        'delivery_not_redeliverable',
        `Only failed deliveries can be redelivered; this one is ${d.status}. Use Run now to submit the latest commit again.`,
      );
    }
    const queued = await this.repo.transaction(async (tx) => {
      if (!(await tx.requeueFailed(d.id))) return false;
      await this.jobs.enqueue(tx.currentManager(), DELIVERY_QUEUE, { deliveryId: d.id });
      return true;
    });
    if (!queued)
      throw conflict('delivery_not_redeliverable', 'This delivery is already being processed again.');
    this.jobs.wake(DELIVERY_QUEUE);
    return deliveryView((await this.repo.findDelivery(d.id))!);
  }

  // Helpers --------------------------------------------------------------------------------------

  private async connectionOf(teamId: string, connectionId: string): Promise<RepositoryConnectionEntity> {
    const conn = await this.repo.findConnection(connectionId);
    if (!conn || conn.teamId !== teamId)
      throw notFound(
        'connection_not_found',
        `No repository connection ${connectionId} in this team; list them with GET /api/teams/${teamId}/repositories.`,
      );
    return conn;
  }

  private folder(raw: string): string {
    const folder = normalizeEngineFolder(raw);
    if (!folder)
      throw badRequest(
        'invalid_engine_folder',
        `"${raw}" is not a folder inside the repository: use a relative path such as engine or src/engine (no .. or leading /).`,
      );
    return folder;
  }

  private taken(existing: RepositoryConnectionEntity | null, teamId: string, fullName: string): AppError {
    if (existing?.teamId === teamId)
      return conflict(
        'repository_already_connected',
        `${fullName} is already connected to this team; change its settings instead.`,
        { connectionId: existing.id },
      );
    return conflict(
      'repository_taken',
      `${fullName} is connected to another team. A repository connects to at most one team: that team must disconnect it first.`,
    );
  }

  private async connectionView(c: RepositoryConnectionEntity): Promise<ConnectionView> {
    const [creator, last] = await Promise.all([
      this.users.findById(c.connectedBy),
      this.repo.latestDelivery(c.id),
    ]);
    return {
      id: c.id,
      teamId: c.teamId,
      installationId: c.installationId,
      repositoryId: c.githubRepositoryId,
      fullName: c.fullName,
      htmlUrl: `${this.config.GITHUB_WEB_URL.replace(/\/+$/, '')}/${c.fullName}`,
      defaultBranch: c.defaultBranch,
      engineFolder: c.engineFolder,
      benchmark: c.benchmarkId,
      autoRun: c.autoRun,
      evaluation: c.evaluation,
      connectedBy: creator?.login ?? 'unknown',
      createdAt: c.createdAt.toISOString(),
      updatedAt: c.updatedAt.toISOString(),
      lastDelivery: last ? deliveryView(last) : null,
    };
  }
}

export function deliveryView(d: GithubDeliveryEntity): DeliveryView {
  return {
    id: d.id,
    githubDeliveryId: d.githubDeliveryId,
    event: d.event,
    action: d.action,
    status: d.status,
    reason: d.reason,
    failureCode: d.failureCode,
    ref: d.ref,
    commitSha: d.commitSha,
    submissionId: d.submissionId,
    runId: d.runId,
    attempts: d.attempts,
    receivedAt: d.receivedAt.toISOString(),
    processedAt: d.processedAt ? d.processedAt.toISOString() : null,
    redeliverable: d.status === 'failed' && d.payload !== null,
  };
}
