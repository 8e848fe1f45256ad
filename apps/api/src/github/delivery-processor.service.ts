import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { packFiles } from '@dryft/libs/node';
import { BenchmarksService } from '../benchmarks/benchmarks.service';
import { AppError, unprocessable } from '../common/errors';
import { Clock } from '../common/clock';
import { Jobs } from '../common/jobs';
import { CONFIG, Config } from '../config/config';
import { RunActor, RunsService } from '../runs/runs.service';
import { SubmissionsService, sourceNameFrom } from '../submissions/submissions.service';
import { TeamsService } from '../teams/teams.service';
import { EngineFolderError, engineFilesFromTarball } from './engine-folder';
import type { DeliveryStatus, GithubDeliveryEntity } from './github-delivery.entity';
import type { Evaluation, RepositoryConnectionEntity } from './repository-connection.entity';
import { GithubClient, GithubError } from './github-client';
import { DELIVERY_QUEUE, type DeliveryJob } from './delivery-queue';
import { missingGithubAppSettings } from './github-settings';
import { GithubRepository } from './github.repository';

/** The longest wait between two tries of a delivery whose upload found every checker busy. */
const BUSY_RETRY_MAX_SECONDS = 300;

/** What processing a delivery came to; `error` is the refusal a "Run now" caller receives. */
export interface Outcome {
  status: Extract<DeliveryStatus, 'succeeded' | 'failed' | 'ignored'>;
  reason: string;
  failureCode?: string | null;
  teamId?: string | null;
  connectionId?: string | null;
  submissionId?: string | null;
  runId?: string | null;
  error?: AppError;
}

/** The payload a "Run now" delivery keeps, so a failed one can be processed again. */
export interface RunNowPayload {
  kind: 'run_now';
  sha: string;
  branch: string;
  mode: Evaluation;
}

interface PushPayload {
  ref: string;
  after: string;
  deleted?: boolean;
  installation?: { id: number };
  repository: { id: number; full_name: string; default_branch?: string; master_branch?: string };
}

interface InstallationPayload {
  action: string;
  installation: { id: number; account?: { login?: string } };
  repositories_removed?: { id: number; full_name: string }[];
}

/**
 * Processes deliveries: pushes become a submission and a run, uninstalls and removed repositories
 * disconnect. It runs in the pg-boss worker (webhooks, redeliveries) and inline for "Run now".
 * Every expected failure is recorded on the delivery with its reason; only surprises throw.
 */
@Injectable()
export class DeliveryProcessor implements OnModuleInit {
  private readonly logger = new Logger('GithubDeliveries');

  constructor(
    private readonly repo: GithubRepository,
    private readonly client: GithubClient,
    private readonly jobs: Jobs,
    private readonly submissions: SubmissionsService,
    private readonly runs: RunsService,
    private readonly benchmarks: BenchmarksService,
    private readonly teams: TeamsService,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /** Works the delivery queue only when the GitHub App is configured (no delivery comes otherwise). */
  async onModuleInit(): Promise<void> {
    if (missingGithubAppSettings(this.config).length === 0)
      await this.jobs.work(DELIVERY_QUEUE, ({ data }) =>
        this.process(data.deliveryId, data).then(() => undefined),
      );
  }

  /**
   * Processes one delivery if it is waiting (or failed); null when someone else has it or it is done.
   * From the job queue (`job`), a delivery whose upload found every checker busy is queued again
   * for later instead of failing; inline ("Run now") the caller gets the 503 and its Retry-After.
   */
  async process(deliveryId: string, job?: DeliveryJob): Promise<Outcome | null> {
    const delivery = await this.repo.claimDelivery(deliveryId);
    if (!delivery) return null;
    let outcome: Outcome;
    try {
      outcome = await this.route(delivery);
    } catch (err) {
      const failure = asFailure(err);
      if (!failure) {
        await this.repo.updateDelivery(delivery.id, {
          status: 'failed',
          reason: `Internal error while processing (${(err as Error).message}); it is retried automatically, or redeliver it.`,
          failureCode: 'internal_error',
          processedAt: this.clock.now(),
        });
        throw err;
      }
      // Keep the routing the delivery already had (its team and connection) on failure.
      outcome = { ...failure, teamId: delivery.teamId, connectionId: delivery.connectionId };
    }
    if (job && outcome.status === 'failed' && outcome.failureCode === 'checker_busy') {
      const retries = job.busyRetries ?? 0;
      if (retries < this.config.GITHUB_CHECKER_BUSY_RETRIES)
        return this.retryWhenCheckersFree(delivery, outcome, retries);
      outcome = {
        ...outcome,
        reason: `${outcome.reason} Gave up after ${retries} automatic ${retries === 1 ? 'retry' : 'retries'} while the hub's upload checkers stayed busy: redeliver it once the hub is less busy.`,
      };
    }
    await this.repo.updateDelivery(delivery.id, {
      status: outcome.status,
      reason: outcome.reason,
      failureCode: outcome.failureCode ?? null,
      processedAt: this.clock.now(),
      ...(outcome.teamId !== undefined ? { teamId: outcome.teamId } : {}),
      ...(outcome.connectionId !== undefined ? { connectionId: outcome.connectionId } : {}),
      ...(outcome.submissionId ? { submissionId: outcome.submissionId } : {}),
      ...(outcome.runId ? { runId: outcome.runId } : {}),
    });
    if (outcome.status === 'failed')
      this.logger.log(
        `delivery ${delivery.githubDeliveryId ?? delivery.id} (${delivery.event}) failed: ${outcome.reason}`,
      );
    return outcome;
  }

  /**
   * Every upload checker was busy: nothing was stored (the checkers refuse before storing), so the
   * delivery goes back to `queued` with a job that waits its Retry-After, doubled at each try. Both
   * in one transaction, so a crash leaves it either failed or queued with its job. The later try
   * claims the delivery like any other; the run's idempotency key comes from the delivery, so it
   * starts one run at most.
   */
  private async retryWhenCheckersFree(
    d: GithubDeliveryEntity,
    outcome: Outcome,
    retries: number,
  ): Promise<Outcome> {
    const retryAfter = Math.max(1, outcome.error?.retryAfterSeconds ?? 1);
    const wait = Math.min(BUSY_RETRY_MAX_SECONDS, retryAfter * 2 ** retries);
    const at = new Date(this.clock.now().getTime() + wait * 1000);
    const reason =
      `Every upload checker of this hub was busy, so nothing was stored yet; trying again automatically at ` +
      `${at.toISOString().slice(11, 19)} UTC (in ${wait} s; retry ${retries + 1} of ${this.config.GITHUB_CHECKER_BUSY_RETRIES}).`;
    await this.repo.transaction(async (tx) => {
      await tx.updateDelivery(d.id, {
        status: 'queued',
        reason,
        failureCode: 'checker_busy',
        processedAt: this.clock.now(),
        ...(outcome.teamId !== undefined ? { teamId: outcome.teamId } : {}),
        ...(outcome.connectionId !== undefined ? { connectionId: outcome.connectionId } : {}),
      });
      await this.jobs.enqueue(
        tx.currentManager(),
        DELIVERY_QUEUE,
        { deliveryId: d.id, busyRetries: retries + 1 },
        { startAfterSeconds: wait },
      );
    });
    this.logger.log(`delivery ${d.githubDeliveryId ?? d.id} (${d.event}): ${reason}`);
    return { ...outcome, reason };
  }

  private async route(d: GithubDeliveryEntity): Promise<Outcome> {
    switch (d.event) {
      case 'push':
        return this.push(d, d.payload as unknown as PushPayload);
      case 'run_now': {
        const p = d.payload as unknown as RunNowPayload;
        const conn = d.connectionId ? await this.repo.findConnection(d.connectionId) : null;
        if (!conn)
          return {
            status: 'failed',
            reason: 'The repository was disconnected before this ran; connect it again.',
            failureCode: 'not_connected',
          };
        return this.submitCommit(conn, d, p.sha, p.mode, d.requestedBy);
      }
      case 'installation': {
        const p = d.payload as unknown as InstallationPayload;
        if (p.action === 'deleted') return this.removeInstallation(p);
        return { status: 'ignored', reason: `installation ${p.action}: nothing for Dryft to do.` };
      }
      case 'installation_repositories': {
        const p = d.payload as unknown as InstallationPayload;
        if (p.action === 'removed') return this.removeRepositories(p);
        return {
          status: 'ignored',
          reason: `Repositories ${p.action}: connect them from Repositories when you want them to submit.`,
        };
      }
      default:
        return { status: 'ignored', reason: `Dryft does not act on ${d.event} events.` };
    }
  }

  private async push(d: GithubDeliveryEntity, p: PushPayload): Promise<Outcome> {
    const conn = await this.repo.findConnectionByRepository(String(p.repository.id));
    if (!conn)
      return {
        status: 'ignored',
        reason: `${p.repository.full_name} is not connected to a team on this hub.`,
        connectionId: null,
      };
    const routed = { teamId: conn.teamId, connectionId: conn.id };
    if (p.installation && String(p.installation.id) !== conn.installationId) {
      return {
        ...routed,
        status: 'ignored',
        reason: `The push came through installation ${p.installation.id}, but the connection uses installation ${conn.installationId}.`,
      };
    }
    // The push carries the repository's current name and default branch: keep the connection fresh.
    const defaultBranch = p.repository.default_branch ?? p.repository.master_branch ?? conn.defaultBranch;
    if (defaultBranch !== conn.defaultBranch || p.repository.full_name !== conn.fullName) {
      await this.repo.updateConnection(conn.id, { defaultBranch, fullName: p.repository.full_name });
      conn.defaultBranch = defaultBranch;
      conn.fullName = p.repository.full_name;
    }
    if (p.deleted || /^0+$/.test(p.after))
      return { ...routed, status: 'ignored', reason: `${p.ref} was deleted; nothing to submit.` };
    if (p.ref !== `refs/heads/${defaultBranch}`) {
      return {
        ...routed,
        status: 'ignored',
        reason: `Push to ${p.ref}: only pushes to the default branch (${defaultBranch}) submit.`,
      };
    }
    if (!conn.autoRun) {
      return {
        ...routed,
        status: 'ignored',
        reason: 'Auto-run on push is off for this repository: turn it on, or use Run now.',
      };
    }
    return { ...routed, ...(await this.submitCommit(conn, d, p.after, conn.evaluation, conn.connectedBy)) };
  }

  /**
   * Fetches the commit, packs its engine folder, validates it with the shared archive rules, creates
   * the submission and starts the run. A delivery processed again reuses the submission it already
   * created, and the run's idempotency key comes from the delivery, so it never starts a second run.
   */
  private async submitCommit(
    conn: RepositoryConnectionEntity,
    d: GithubDeliveryEntity,
    sha: string,
    mode: Evaluation,
    actingUserId: string | null,
  ): Promise<Outcome> {
    const routed = { teamId: conn.teamId, connectionId: conn.id };
    const actor = await this.actorFor(conn.teamId, actingUserId);
    const where = `${conn.fullName}@${sha.slice(0, 7)}`;
    let submissionId = d.submissionId;
    let name = '';
    if (!submissionId) {
      const benchmark = await this.benchmarks.get(conn.benchmarkId);
      const tarball = await this.client.tarball(conn.installationId, conn.fullName, sha);
      const files = await engineFilesFromTarball(tarball, conn.engineFolder, where);
      const repoName = conn.fullName.split('/')[1] ?? conn.fullName;
      const created = await this.submissions.create(
        conn.teamId,
        actor.id,
        benchmark,
        `${repoName}.tar.gz`,
        packFiles(files),
        {
          source: 'github',
          sourceName: sourceNameFrom(repoName),
          commitSha: sha,
          repositoryId: conn.id,
        },
      );
      submissionId = created.submission.id;
      name = created.submission.name;
      await this.repo.updateDelivery(d.id, { submissionId, commitSha: sha });
    }
    try {
      const out = await this.runs.createForRepository(actor, {
        submissionId,
        body: mode === 'official' ? { mode: 'official', confirm: true } : { mode: 'public' },
        idempotencyKey: `github-delivery:${d.guid ?? d.id}`,
      });
      const run = out.body.run;
      return {
        ...routed,
        status: 'succeeded',
        reason: `Submitted ${name || run.submissionName} from ${where} and started ${mode === 'official' ? 'an official' : 'a public'} run.`,
        submissionId,
        runId: run.id,
      };
    } catch (err) {
      const failure = asFailure(err);
      if (!failure) throw err;
      return {
        ...routed,
        ...failure,
        submissionId,
        reason: `The submission from ${where} was created, but its run was not started: ${failure.reason}`,
      };
    }
  }

  /** Pushes act as the member who connected the repository, or an owner once that member left. */
  private async actorFor(teamId: string, preferredUserId: string | null): Promise<RunActor> {
    const members = await this.teams.memberViews(teamId);
    const m =
      members.find((x) => x.userId === preferredUserId) ??
      members.find((x) => x.role === 'owner') ??
      members[0];
    if (!m)
      throw unprocessable(
        'team_has_no_members',
        'The team has no members left to submit for; reconnect the repository from an active team.',
      );
    return { id: m.userId, login: m.login };
  }

  private async removeInstallation(p: InstallationPayload): Promise<Outcome> {
    const installationId = String(p.installation.id);
    const installation = await this.repo.findInstallation(installationId);
    const connections = await this.repo.listConnectionsOfInstallation(installationId);
    if (!installation && connections.length === 0)
      return {
        status: 'ignored',
        reason: `Installation ${installationId} was not connected to a team on this hub.`,
      };
    await this.repo.transaction(async (tx) => {
      await tx.deleteConnections(connections.map((c) => c.id));
      await tx.deleteInstallation(installationId);
    });
    const names = connections.map((c) => c.fullName).join(', ') || 'no repositories';
    return {
      status: 'succeeded',
      teamId: installation?.teamId ?? connections[0]?.teamId ?? null,
      reason: `The GitHub App was uninstalled from ${p.installation.account?.login ?? installation?.accountLogin ?? 'the account'}: disconnected ${names}.`,
    };
  }

  private async removeRepositories(p: InstallationPayload): Promise<Outcome> {
    const installationId = String(p.installation.id);
    const removed = new Set((p.repositories_removed ?? []).map((r) => String(r.id)));
    const connections = (await this.repo.listConnectionsOfInstallation(installationId)).filter((c) =>
      removed.has(c.githubRepositoryId),
    );
    if (connections.length === 0)
      return {
        status: 'ignored',
        reason: 'None of the repositories removed from the GitHub App was connected.',
      };
    await this.repo.deleteConnections(connections.map((c) => c.id));
    return {
      status: 'succeeded',
      teamId: connections[0].teamId,
      reason: `The GitHub App lost access to ${connections.map((c) => c.fullName).join(', ')}: disconnected.`,
    };
  }
}

/** An expected failure in words (and the refusal to hand a "Run now" caller); null for surprises. */
function asFailure(err: unknown): (Outcome & { status: 'failed' }) | null {
  if (err instanceof EngineFolderError) {
    return {
      status: 'failed',
      failureCode: err.rule,
      reason: `${err.rule}: ${err.message}`,
      error: unprocessable('invalid_engine_folder', `${err.rule}: ${err.message}`),
    };
  }
  if (err instanceof AppError) {
    const problems = (err.details as { problems?: { rule: string }[] } | undefined)?.problems;
    const code = err.code === 'invalid_submission' && problems?.length ? problems[0].rule : err.code;
    return { status: 'failed', failureCode: code, reason: err.message, error: err };
  }
  if (err instanceof GithubError) {
    const status = err.status === 404 ? 404 : err.status === 403 || err.status === 401 ? 403 : 502;
    const hint =
      err.status === 404 || err.status === 403 || err.status === 401
        ? ' Check that the GitHub App is still installed and has access to the repository.'
        : '';
    return {
      status: 'failed',
      failureCode: 'github_error',
      reason: err.message + hint,
      error: new AppError(status, 'github_error', err.message + hint),
    };
  }
  return null;
}
