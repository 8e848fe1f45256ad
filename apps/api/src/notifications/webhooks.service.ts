import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type {
  BenchmarkNotice,
  CreateWebhookBody,
  FinalBoardPublishedPayload,
  RoundClosingPayload,
  RunFinishedPayload,
  WebhookDeliveryView,
  WebhookView,
} from '@dryft/libs';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { Clock } from '../common/clock';
import { Jobs, type Job } from '../common/jobs';
import { badRequest, conflict, notFound } from '../common/errors';
import { EventBus } from '../common/event-bus';
import type { Principal } from '../common/principal';
import { CONFIG, Config } from '../config/config';
import { RunViews } from '../runs/run-views';
import { TeamsService } from '../teams/teams.service';
import { UsersService } from '../users/users.service';
import type { TeamWebhookEntity } from './team-webhook.entity';
import type { WebhookDeliveryEntity } from './webhook-delivery.entity';
import { webhookQueue, type WebhookJob } from './webhook-queue';
import { WebhooksRepository } from './webhooks.repository';
import { postWebhook, webhookTargetProblem } from './webhook-target';

const MAX_WEBHOOKS_PER_TEAM = 10;

/** `sha256=<hex>`: GitHub's X-Hub-Signature-256 scheme, over the exact body bytes. */
export function signBody(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * Outgoing team webhooks. A run reaching a final state (`run.finished` on the bus) becomes one
 * delivery per subscribed webhook, inserted with its pg-boss job in one transaction; the worker
 * posts the signed body and pg-boss retries a failure with exponential backoff. A benchmark notice
 * (`benchmark.notice`: `round.closing`, `final_board.published`) goes the same way to the
 * subscribed webhooks of every team that submitted to that benchmark.
 */
@Injectable()
export class WebhooksService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Webhooks');

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly jobs: Jobs,
    private readonly runs: RunViews,
    private readonly teams: TeamsService,
    private readonly users: UsersService,
    private readonly clock: Clock,
    private readonly bus: EventBus,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.bus.on('run.finished', ({ runId }) => this.onRunFinished(runId));
    this.bus.on('benchmark.notice', ({ notice }) => this.onNotice(notice));
    if (await this.repo.anyActive()) await this.startWorker();
  }

  private startWorker(): Promise<void> {
    return this.jobs.work(webhookQueue(this.config), (job) => this.deliver(job));
  }

  async create(principal: Principal, teamId: string, body: CreateWebhookBody) {
    await this.teams.authorize(principal, teamId, 'manage_webhooks');
    if ((await this.repo.listForTeam(teamId)).length >= MAX_WEBHOOKS_PER_TEAM)
      throw conflict(
        'too_many_webhooks',
        `A team has at most ${MAX_WEBHOOKS_PER_TEAM} webhooks; delete one first.`,
      );
    const problem = await webhookTargetProblem(body.url, this.config.OUTGOING_WEBHOOK_ALLOW_PRIVATE);
    if (problem)
      throw badRequest(
        'webhook_url_refused',
        `${problem}. Use the public address of the service that should receive ${[...new Set(body.events)].join(', ')}.`,
      );
    const secret = `whsec_${randomBytes(24).toString('base64url')}`;
    const hook = await this.repo.create({
      teamId,
      url: body.url,
      secret,
      events: [...new Set(body.events)],
      createdBy: principal.user.id,
    });
    await this.startWorker();
    return { ...(await this.view(hook)), secret };
  }

  async list(principal: Principal, teamId: string): Promise<WebhookView[]> {
    await this.teams.authorize(principal, teamId, 'manage_webhooks');
    return Promise.all((await this.repo.listForTeam(teamId)).map((h) => this.view(h)));
  }

  async remove(principal: Principal, teamId: string, id: string): Promise<{ deleted: true; id: string }> {
    await this.teams.authorize(principal, teamId, 'manage_webhooks');
    const hook = await this.repo.find(teamId, id);
    if (!hook) throw notFound('webhook_not_found', `No webhook ${id} in this team.`);
    await this.repo.remove(id, this.clock.now());
    return { deleted: true, id };
  }

  async deliveries(principal: Principal, teamId: string, id: string): Promise<WebhookDeliveryView[]> {
    await this.teams.authorize(principal, teamId, 'manage_webhooks');
    const hook = await this.repo.find(teamId, id);
    if (!hook) throw notFound('webhook_not_found', `No webhook ${id} in this team.`);
    return (await this.repo.listDeliveries(id, 50)).map(deliveryView);
  }

  private async onRunFinished(runId: string): Promise<void> {
    const run = await this.runs.viewById(runId);
    // A baseline re-measure belongs to no team: no team webhook hears of it.
    if (!run?.teamId) return;
    const teamId = run.teamId;
    const hooks = (await this.repo.listForTeam(teamId)).filter((h) => h.events.includes('run.finished'));
    if (hooks.length === 0) return;
    const team = (await this.teams.findById(teamId))!;
    await this.startWorker();
    await this.repo.dataSource.transaction(async (manager) => {
      for (const hook of hooks) {
        const id = randomUUID();
        const payload: RunFinishedPayload = {
          event: 'run.finished',
          deliveryId: id,
          sentAt: this.clock.now().toISOString(),
          team: { id: team.id, slug: team.slug, name: team.name },
          run,
        };
        await this.repo.insertDelivery(manager, {
          id,
          webhookId: hook.id,
          teamId,
          event: 'run.finished',
          runId,
          body: JSON.stringify(payload),
        });
        await this.jobs.enqueue(manager, webhookQueue(this.config), { deliveryId: id });
      }
    });
    this.jobs.wake(webhookQueue(this.config));
  }

  /** One delivery per subscribed webhook of each team that submitted to the notice's benchmark. */
  private async onNotice(notice: BenchmarkNotice): Promise<void> {
    const hooks = await this.repo.subscribedForBenchmark(notice.benchmarkId, notice.kind);
    if (hooks.length === 0) return;
    const teams = new Map<string, { id: string; slug: string; name: string }>();
    for (const teamId of new Set(hooks.map((h) => h.teamId))) {
      const team = await this.teams.findById(teamId);
      if (team) teams.set(teamId, { id: team.id, slug: team.slug, name: team.name });
    }
    await this.startWorker();
    const benchmark = { id: notice.benchmarkId, title: notice.benchmarkTitle };
    await this.repo.dataSource.transaction(async (manager) => {
      for (const hook of hooks) {
        const team = teams.get(hook.teamId);
        if (!team) continue;
        const id = randomUUID();
        const sentAt = this.clock.now().toISOString();
        const payload: RoundClosingPayload | FinalBoardPublishedPayload =
          notice.kind === 'round.closing'
            ? {
                event: 'round.closing',
                deliveryId: id,
                sentAt,
                team,
                benchmark,
                scheduleId: notice.scheduleId,
                target: notice.target,
                closesAt: notice.closesAt,
                minutesLeft: notice.minutesLeft,
              }
            : {
                event: 'final_board.published',
                deliveryId: id,
                sentAt,
                team,
                benchmark,
                publishedAt: notice.publishedAt,
                url: notice.url,
              };
        await this.repo.insertDelivery(manager, {
          id,
          webhookId: hook.id,
          teamId: hook.teamId,
          event: notice.kind,
          runId: null,
          body: JSON.stringify(payload),
        });
        await this.jobs.enqueue(manager, webhookQueue(this.config), { deliveryId: id });
      }
    });
    this.jobs.wake(webhookQueue(this.config));
  }

  /** One attempt. Throws (so pg-boss retries with backoff) unless it succeeded or was the last. */
  private async deliver(job: Job<WebhookJob>): Promise<void> {
    const delivery = await this.repo.findDelivery(job.data.deliveryId);
    if (!delivery || delivery.status !== 'pending') return;
    const hook = await this.repo.findAny(delivery.webhookId);
    const last = job.retryCount >= job.retryLimit;
    if (!hook || hook.deletedAt) {
      await this.repo.recordAttempt(delivery.id, {
        status: 'failed',
        statusCode: null,
        error: 'the webhook was deleted',
        at: this.clock.now(),
      });
      return;
    }
    // Checked again at each delivery: a name that resolved to a public address at registration may
    // point inside since (DNS rebinding). Refused for good, not retried.
    const problem = await webhookTargetProblem(hook.url, this.config.OUTGOING_WEBHOOK_ALLOW_PRIVATE);
    if (problem) {
      await this.repo.recordAttempt(delivery.id, {
        status: 'failed',
        statusCode: null,
        error: `not sent: ${problem}`,
        at: this.clock.now(),
      });
      return;
    }
    let statusCode: number | null = null;
    let error: string | null = null;
    try {
      statusCode = await postWebhook(hook.url, {
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Dryft-Hookshot',
          'x-dryft-event': delivery.event,
          'x-dryft-delivery': delivery.id,
          'x-hub-signature-256': signBody(hook.secret, delivery.body),
        },
        body: delivery.body,
        timeoutMs: this.config.OUTGOING_WEBHOOK_TIMEOUT_MS,
        allowPrivate: this.config.OUTGOING_WEBHOOK_ALLOW_PRIVATE,
      });
      if (statusCode >= 200 && statusCode < 300) {
        await this.repo.recordAttempt(delivery.id, {
          status: 'succeeded',
          statusCode,
          error: null,
          at: this.clock.now(),
        });
        return;
      }
      error = `the receiver answered ${statusCode}`;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EPRIVATEADDRESS') {
        // DNS answered an inside address at connect time: nothing was sent, and nothing will be.
        await this.repo.recordAttempt(delivery.id, {
          status: 'failed',
          statusCode: null,
          error: `not sent: ${(err as Error).message}`,
          at: this.clock.now(),
        });
        return;
      }
      error =
        (err as Error).name === 'TimeoutError'
          ? `no answer within ${this.config.OUTGOING_WEBHOOK_TIMEOUT_MS} ms`
          : `could not reach the receiver: ${(err as Error).message}`;
    }
    await this.repo.recordAttempt(delivery.id, {
      status: last ? 'failed' : 'pending',
      statusCode,
      error: last ? `${error}; gave up after ${job.retryCount + 1} attempts` : error,
      at: this.clock.now(),
    });
    if (!last) throw new Error(`delivery ${delivery.id}: ${error}`);
    this.logger.warn(`webhook delivery ${delivery.id} failed for good: ${error}`);
  }

  private async view(h: TeamWebhookEntity): Promise<WebhookView> {
    const creator = await this.users.findById(h.createdBy);
    return {
      id: h.id,
      teamId: h.teamId,
      url: h.url,
      events: h.events as WebhookView['events'],
      createdBy: creator?.login ?? 'unknown',
      createdAt: h.createdAt.toISOString(),
    };
  }
}

function deliveryView(d: WebhookDeliveryEntity): WebhookDeliveryView {
  return {
    id: d.id,
    webhookId: d.webhookId,
    event: d.event as WebhookDeliveryView['event'],
    runId: d.runId,
    status: d.status as WebhookDeliveryView['status'],
    attempts: d.attempts,
    lastStatusCode: d.lastStatusCode,
    lastError: d.lastError,
    createdAt: d.createdAt.toISOString(),
    deliveredAt: d.deliveredAt?.toISOString() ?? null,
  };
}
