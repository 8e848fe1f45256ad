import { Inject, Injectable, Logger } from '@nestjs/common';
import { Webhooks } from '@octokit/webhooks';
import { AppError, badRequest, unauthorized } from '../common/errors';
import { CONFIG, Config } from '../config/config';
import { githubAppSettings } from './github-settings';
import { Jobs } from '../common/jobs';
import { DELIVERY_QUEUE } from './delivery-queue';
import { GithubRepository } from './github.repository';

/** The events Dryft acts on; every other event is recorded as ignored. */
const HANDLED = new Set(['push', 'installation', 'installation_repositories']);

export interface IncomingDelivery {
  rawBody: Buffer | undefined;
  contentType: string | undefined;
  signature: string | undefined;
  event: string | undefined;
  deliveryId: string | undefined;
}

/**
 * POST /api/github/webhooks: the signature is checked on the raw bytes before the payload is read;
 * a verified delivery is stored once per X-GitHub-Delivery with its job in the same transaction,
 * and answered at once. Processing happens in the background (DeliveryProcessor).
 */
@Injectable()
export class GithubWebhooksService {
  private readonly logger = new Logger('GithubWebhooks');
  private verifier?: Webhooks;

  constructor(
    private readonly repo: GithubRepository,
    private readonly jobs: Jobs,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async receive(input: IncomingDelivery): Promise<{ status: number; body: Record<string, unknown> }> {
    const settings = githubAppSettings(this.config);
    this.verifier ??= new Webhooks({ secret: settings.webhookSecret });
    const claimed = input.deliveryId?.slice(0, 200) ?? null;
    const event = input.event?.slice(0, 100) ?? 'unknown';
    const reject = async (error: AppError) => {
      // Nothing of an unverified request is kept but the fact that it came: no payload, no dedup key.
      await this.repo.insertDelivery({
        guid: null,
        githubDeliveryId: claimed,
        event,
        status: 'rejected',
        reason: error.message,
        failureCode: error.code,
        payload: null,
        processedAt: new Date(),
      });
      this.logger.warn(`rejected webhook delivery ${claimed ?? '(no id)'}: ${error.code}`);
      throw error;
    };
    if (!input.rawBody || input.rawBody.length === 0) {
      return reject(
        new AppError(
          415,
          'webhook_content_type',
          'The webhook body is missing or not JSON: set the GitHub App webhook content type to application/json.',
        ),
      );
    }
    if (!input.signature) {
      return reject(
        unauthorized(
          'signature_missing',
          'The X-Hub-Signature-256 header is missing: set a webhook secret on the GitHub App (the same as GITHUB_WEBHOOK_SECRET).',
        ),
      );
    }
    const raw = input.rawBody.toString('utf8');
    const valid =
      /^sha256=[0-9a-f]{64}$/i.test(input.signature) &&
      (await this.verifier.verify(raw, input.signature).catch(() => false));
    if (!valid) {
      return reject(
        unauthorized(
          'signature_invalid',
          'The X-Hub-Signature-256 does not match the body: the GitHub App webhook secret and GITHUB_WEBHOOK_SECRET differ.',
        ),
      );
    }
    // Verified: now, and only now, read the payload.
    if (!claimed || !input.event)
      throw badRequest(
        'delivery_headers_missing',
        'A webhook delivery needs the X-GitHub-Event and X-GitHub-Delivery headers.',
      );
    let payload: Record<string, any>;
    try {
      const text = /x-www-form-urlencoded/i.test(input.contentType ?? '')
        ? (new URLSearchParams(raw).get('payload') ?? '')
        : raw;
      payload = JSON.parse(text);
    } catch {
      throw badRequest('invalid_json', 'The webhook payload is not valid JSON.');
    }
    const handled = HANDLED.has(event);
    const repository = payload.repository as { id?: number; full_name?: string } | undefined;
    const installationId = payload.installation?.id ? String(payload.installation.id) : null;
    const connection = repository?.id
      ? await this.repo.findConnectionByRepository(String(repository.id))
      : null;
    const installation =
      !connection && installationId ? await this.repo.findInstallation(installationId) : null;
    const result = await this.repo.transaction(async (tx) => {
      const inserted = await tx.insertDeliveryOnce({
        guid: claimed,
        githubDeliveryId: claimed,
        event,
        action: typeof payload.action === 'string' ? payload.action : null,
        status: handled ? 'queued' : 'ignored',
        reason: handled
          ? null
          : event === 'ping'
            ? 'ping: the webhook reaches Dryft and its signature is valid.'
            : `Dryft does not act on ${event} events.`,
        teamId: connection?.teamId ?? installation?.teamId ?? null,
        connectionId: connection?.id ?? null,
        installationId,
        githubRepositoryId: repository?.id ? String(repository.id) : null,
        repositoryFullName: repository?.full_name ?? null,
        ref: typeof payload.ref === 'string' ? payload.ref : null,
        commitSha: event === 'push' && typeof payload.after === 'string' ? payload.after : null,
        payload: handled ? payload : null,
        processedAt: handled ? null : new Date(),
      });
      if (inserted) {
        if (handled)
          await this.jobs.enqueue(tx.currentManager(), DELIVERY_QUEUE, { deliveryId: inserted.id });
        return { id: inserted.id, status: inserted.status, duplicate: false };
      }
      // Seen before. GitHub's "Redeliver" of a delivery that failed here processes it again.
      const existing = (await tx.findDeliveryByGuid(claimed))!;
      if (
        existing.status === 'failed' &&
        existing.payload !== null &&
        (await tx.requeueFailed(existing.id))
      ) {
        await this.jobs.enqueue(tx.currentManager(), DELIVERY_QUEUE, { deliveryId: existing.id });
        return { id: existing.id, status: 'queued' as const, duplicate: true };
      }
      return { id: existing.id, status: existing.status, duplicate: true };
    });
    if (result.status === 'queued') this.jobs.wake(DELIVERY_QUEUE);
    return { status: result.duplicate ? 200 : 202, body: { received: true, ...result } };
  }
}
