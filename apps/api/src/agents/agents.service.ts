import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { AgentCapabilities, AgentView } from '@dryft/libs';
import { checkTokenFormat, generateToken, hashToken, tokenDisplayPrefix } from '@dryft/libs/node';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { AuditService } from '../audit/audit.service';
import { Clock } from '../common/clock';
import { notFound, unauthorized } from '../common/errors';
import type { Principal } from '../common/principal';
import { CONFIG, Config } from '../config/config';
import { AgentEntity } from './agent.entity';
import { AgentEvents } from './agent-events';
import { RunEntity } from '../runs/run.entity';
import { RunQueue } from '../runs/run-queue';
import { SubmissionEntity } from '../submissions/submission.entity';
import { AgentsRepository } from './agents.repository';

export const LOCAL_AGENT_NAME = 'local';

/** Agent records and their tokens; the socket side lives in the gateway. */
@Injectable()
export class AgentsService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Agents');

  constructor(
    private readonly agents: AgentsRepository,
    private readonly queue: RunQueue,
    private readonly clock: Clock,
    private readonly events: AgentEvents,
    private readonly audit: AuditService,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /**
   * `npm start` runs a local agent next to the API: in development, with LOCAL_AGENT_TOKEN_FILE set,
   * the API keeps a 'local' agent record whose token lives in that file (mode 0600). The token is
   * made once and kept across restarts, so a local agent that is running a run when the API restarts
   * reconnects with the same identity and finishes it. A file that is missing, unreadable or holds a
   * revoked token gets a fresh token.
   */
  async onApplicationBootstrap(): Promise<void> {
    const file = this.config.LOCAL_AGENT_TOKEN_FILE;
    if (!file) return;
    if (this.config.isProduction) {
      this.logger.warn(
        'LOCAL_AGENT_TOKEN_FILE is ignored in production: create agents with POST /api/admin/agents.',
      );
      return;
    }
    const target = path.resolve(this.config.rootDir, file);
    let token = await this.readLocalToken(target);
    if (token) {
      const holder = await this.agents.findByTokenHash(hashToken(token));
      // A revoked token stays revoked: an organizer's decision outlives a restart.
      if (holder?.revokedAt) token = null;
    }
    const kept = token !== null;
    token ??= generateToken('agent');
    const existing = await this.agents.findActiveByName(LOCAL_AGENT_NAME);
    if (existing) {
      if (existing.tokenHash !== hashToken(token))
        await this.agents.update(existing.id, {
          tokenHash: hashToken(token),
          tokenPrefix: tokenDisplayPrefix(token),
        });
    } else {
      await this.agents.insert({
        name: LOCAL_AGENT_NAME,
        tokenHash: hashToken(token),
        tokenPrefix: tokenDisplayPrefix(token),
        createdBy: null,
      });
    }
    if (kept) {
      this.logger.log(`local agent token kept (${target})`);
      return;
    }
    await fs.mkdir(path.dirname(target), { recursive: true });
    const tmp = `${target}.${process.pid}.tmp`;
    await fs.writeFile(tmp, `${token}\n`, { mode: 0o600 });
    await fs.chmod(tmp, 0o600);
    await fs.rename(tmp, target);
    this.logger.log(`local agent token written to ${target}`);
  }

  /** The token in the local agent's file when it is one (right format and checksum), else null. */
  private async readLocalToken(file: string): Promise<string | null> {
    let text: string;
    try {
      text = (await fs.readFile(file, 'utf8')).trim();
    } catch {
      return null;
    }
    if (!checkTokenFormat(text, 'agent').ok) return null;
    const mode = (await fs.stat(file)).mode & 0o777;
    if (mode !== 0o600) await fs.chmod(file, 0o600);
    return text;
  }

  async create(principal: Principal, name: string): Promise<AgentView & { token: string }> {
    const token = generateToken('agent');
    const agent = await this.agents.insert({
      name,
      tokenHash: hashToken(token),
      tokenPrefix: tokenDisplayPrefix(token),
      createdBy: principal.user.id,
    });
    this.events.changed();
    const created = { ...(await this.view(agent)), token };
    await this.audit.record(principal, {
      action: 'agent.create',
      target: { kind: 'agent', id: created.id },
      details: { name: created.name },
    });
    return created;
  }

  async list(): Promise<AgentView[]> {
    const agents = await this.agents.list();
    const active = await this.queue.activeRunsByAgent();
    return agents.map((a) =>
      this.toView(
        a,
        active.filter((r) => r.agentId === a.id).map((r) => r.id),
      ),
    );
  }

  /** The agent record, or null (the socket side checks revocation itself). */
  find(id: string): Promise<AgentEntity | null> {
    return this.agents.findById(id);
  }

  async get(id: string): Promise<AgentEntity> {
    const agent = await this.agents.findById(id);
    if (!agent)
      throw notFound('agent_not_found', `No agent with id "${id}"; list them with GET /api/admin/agents.`);
    return agent;
  }

  /** An organizer drains (or undrains) an agent: recorded in the audit log with the reason. */
  async setDraining(
    principal: Principal,
    id: string,
    draining: boolean,
    reason: string | null,
  ): Promise<AgentView> {
    const agent = await this.get(id);
    if (agent.revokedAt) throw notFound('agent_revoked', 'This agent was revoked; create a new one.');
    await this.agents.update(id, { draining });
    agent.draining = draining;
    this.events.changed();
    const view = await this.view(agent);
    await this.audit.record(principal, {
      action: 'agent.drain',
      target: { kind: 'agent', id },
      reason,
      details: { name: view.name, draining },
    });
    return view;
  }

  /**
   * Revokes the token (recorded in the audit log with the reason and the runs it had); the gateway
   * disconnects the agent and fails what it was running.
   */
  async revoke(
    principal: Principal,
    id: string,
    reason: string | null,
  ): Promise<{ agent: AgentView; runIds: string[] }> {
    const agent = await this.get(id);
    if (!agent.revokedAt) {
      agent.revokedAt = this.clock.now();
      await this.agents.update(id, { revokedAt: agent.revokedAt, connected: false });
      agent.connected = false;
    }
    const runIds = (await this.queue.activeRunsByAgent([id])).map((r) => r.id);
    this.events.changed();
    await this.audit.record(principal, {
      action: 'agent.revoke',
      target: { kind: 'agent', id },
      reason,
      details: { name: agent.name, failedRuns: runIds },
    });
    return { agent: this.toView(agent, runIds), runIds };
  }

  /** The socket handshake and the download route: a live, unrevoked `dryft_agent_…` token. */
  async authenticate(token: unknown): Promise<AgentEntity> {
    if (typeof token !== 'string' || token.length === 0) {
      throw unauthorized(
        'agent_token_required',
        'Connect with auth: { token: "dryft_agent_…" } (an organizer creates agents).',
      );
    }
    const format = checkTokenFormat(token, 'agent');
    if (!format.ok)
      throw unauthorized(
        format.reason === 'bad_checksum' ? 'token_bad_checksum' : 'token_malformed',
        format.message,
      );
    const agent = await this.agents.findByTokenHash(hashToken(token));
    if (!agent)
      throw unauthorized(
        'agent_token_invalid',
        'This agent token is not known to this hub; ask an organizer for one.',
      );
    if (agent.revokedAt)
      throw unauthorized('agent_revoked', 'This agent was revoked by an organizer; ask for a new token.');
    return agent;
  }

  async markReady(
    id: string,
    capabilities: AgentCapabilities,
    slots: { index: number; gpus: string[] }[],
  ): Promise<void> {
    await this.agents.update(id, { capabilities, slots, connected: true, lastHeartbeatAt: this.clock.now() });
    this.events.changed();
  }

  async markHeartbeat(id: string): Promise<void> {
    await this.agents.update(id, { lastHeartbeatAt: this.clock.now(), connected: true });
  }

  async markDisconnected(id: string): Promise<void> {
    await this.agents.update(id, { connected: false });
    this.events.changed();
  }

  /**
   * The run and submission behind a one-time download token, consuming it: null when it was used
   * already, or belongs to another agent or a finished run.
   */
  async consumeDownload(
    tokenHash: string,
    agentId: string,
  ): Promise<{ run: RunEntity; submission: SubmissionEntity } | null> {
    const run = await this.queue.consumeDownloadToken(tokenHash, agentId);
    // A baseline re-measure has no submission (and its assignment carries no download URL).
    if (!run?.submissionId) return null;
    const submission = await this.agents.findSubmission(run.submissionId);
    if (!submission) throw new Error(`submission ${run.submissionId} of run ${run.id} is missing`);
    return { run, submission };
  }

  async view(agent: AgentEntity): Promise<AgentView> {
    const runs = await this.queue.activeRunsByAgent([agent.id]);
    return this.toView(
      agent,
      runs.map((r) => r.id),
    );
  }

  private toView(a: AgentEntity, currentRuns: string[]): AgentView {
    const fresh =
      a.lastHeartbeatAt !== null &&
      this.clock.now().getTime() - a.lastHeartbeatAt.getTime() <= this.config.AGENT_LEASE_SECONDS * 1000;
    const status: AgentView['status'] = a.revokedAt
      ? 'revoked'
      : !(a.connected && fresh)
        ? 'offline'
        : a.draining
          ? 'draining'
          : 'online';
    return {
      id: a.id,
      name: a.name,
      status,
      capabilities: a.capabilities,
      slots: a.slots.length,
      busySlots: currentRuns.length,
      currentRuns,
      lastHeartbeatAt: a.lastHeartbeatAt?.toISOString() ?? null,
      createdAt: a.createdAt.toISOString(),
    };
  }
}
