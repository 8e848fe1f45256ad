import { Injectable, Logger } from '@nestjs/common';
import type { BatchAck, HarnessEvent, LogLine, RunBatch, RunFinished } from '@dryft/libs';
import type { RunFinishedAck } from '@dryft/libs';
import type { z } from 'zod';
import { TERMINAL_STATUSES } from '@dryft/libs';
import { Clock } from '../common/clock';
import { EventBus } from '../common/event-bus';
import { RunEntity } from './run.entity';
import { ACTIVE_STATUSES, RunsRepository } from './runs.repository';
import { RunsService } from './runs.service';

type Emit = () => void;

/**
 * The key baselines are cached under, as dispatch looks them up: the GPU model name (the harness
 * and the agent both read it from the driver), or "cpu" for every CPU machine, since the harness
 * names CPUs by model ("cpu: AMD EPYC") and CPU benchmarks are not ranked per CPU model.
 */
export function baselineKey(hardware: string): string {
  return /^cpu\b/i.test(hardware) ? 'cpu' : hardware;
}

/**
 * What agents report about a run, stored exactly once. Batches are numbered per run: a batch at or
 * below the stored seq is a resend (acked, not stored again); one beyond the next is refused with the
 * stored seq so the agent resends from there. The run row is locked per batch, so one run's batches
 * and its verdict are applied in order even across API replicas.
 */
@Injectable()
export class RunLifecycleService {
  private readonly logger = new Logger('RunLifecycle');

  constructor(
    private readonly runs: RunsRepository,
    private readonly runsService: RunsService,
    private readonly clock: Clock,
    private readonly bus: EventBus,
  ) {}

  async markStarted(runId: string, agentId: string): Promise<void> {
    const run = await this.runs.transition(runId, ['assigned'], {
      status: 'running',
      started_at: this.clock.now(),
    });
    if (run && run.agentId === agentId)
      this.bus.emit('run.status', { run: await this.runsService.view(run) });
  }

  async renewLeases(agentId: string, runIds: string[], until: Date): Promise<void> {
    if (runIds.length === 0) return;
    await this.runs
      .currentManager()
      .query(
        `UPDATE runs SET lease_expires_at = $3 WHERE agent_id = $1 AND id = ANY($2) AND status IN ('assigned', 'running')`,
        [agentId, runIds, until],
      );
  }

  async storeBatch(runId: string, agentId: string, batch: RunBatch): Promise<BatchAck> {
    const after: Emit[] = [];
    const ack = await this.runs.transaction(async (tx) => {
      const run = await tx.lock(runId);
      if (!run || run.agentId !== agentId)
        return { ok: false, ackedSeq: 0, stop: true, error: 'This run is not assigned to this agent.' };
      if (!ACTIVE_STATUSES.includes(run.status)) return { ok: true, ackedSeq: run.lastBatchSeq, stop: true };
      if (batch.seq <= run.lastBatchSeq) return { ok: true, ackedSeq: run.lastBatchSeq };
      if (batch.seq > run.lastBatchSeq + 1) {
        return {
          ok: false,
          ackedSeq: run.lastBatchSeq,
          error: `Expected batch ${run.lastBatchSeq + 1}; resend from there.`,
        };
      }
      const lines: LogLine[] = [];
      for (const entry of batch.entries) {
        if (entry.type === 'log') {
          lines.push({ seq: entry.n, ts: entry.ts, stream: entry.stream, text: entry.text });
        } else {
          await this.applyEvent(tx, run, entry.event, after);
        }
      }
      await tx.insertLogs(run.id, lines);
      run.lastBatchSeq = batch.seq;
      if (lines.length) run.lastLogSeq = Math.max(run.lastLogSeq, ...lines.map((l) => l.seq));
      const starting = run.status === 'assigned';
      if (starting) {
        run.status = 'running';
        run.startedAt = this.clock.now();
      }
      await tx
        .currentManager()
        .query(
          'UPDATE runs SET last_batch_seq = $2, last_log_seq = $3, status = $4, started_at = $5 WHERE id = $1',
          [run.id, run.lastBatchSeq, run.lastLogSeq, run.status, run.startedAt],
        );
      if (lines.length) after.unshift(() => this.bus.emit('run.logs', { runId, lines }));
      if (starting)
        after.unshift(
          () => void this.runsService.view(run).then((view) => this.bus.emit('run.status', { run: view })),
        );
      return { ok: true, ackedSeq: run.lastBatchSeq };
    });
    for (const emit of after) emit();
    return ack;
  }

  private async applyEvent(
    tx: RunsRepository,
    run: RunEntity,
    event: HarnessEvent,
    after: Emit[],
  ): Promise<void> {
    const runId = run.id;
    switch (event.type) {
      case 'sample': {
        await tx.upsertSample(runId, event);
        const { type: _t, batchSize: _b, promptLength: _p, peakMemoryBytes: _m, ...sample } = event;
        after.push(() => this.bus.emit('run.sample', { runId, sample }));
        return;
      }
      case 'check': {
        await tx.upsertCheck(runId, event);
        after.push(() =>
          this.bus.emit('run.check', {
            runId,
            check: { name: event.name, passed: event.passed, detail: event.detail },
          }),
        );
        return;
      }
      case 'metric': {
        await tx.upsertMetric(runId, event);
        after.push(() =>
          this.bus.emit('run.metric', {
            runId,
            metric: { name: event.name, step: event.step, value: event.value, elapsedMs: event.elapsedMs },
          }),
        );
        return;
      }
      case 'baseline':
        await tx.upsertBaseline(run.benchmarkId, run.rulesVersion, {
          hardware: baselineKey(event.hardware),
          workloads: event.workloads,
        });
        return;
      case 'log':
      case 'result':
        // Harness log lines arrive as log entries; the verdict arrives with run.finished.
        return;
    }
  }

  /** The verdict, applied once; a resend after a lost ack is answered ok without changing anything. */
  async finish(
    runId: string,
    agentId: string,
    finished: RunFinished,
  ): Promise<z.infer<typeof RunFinishedAck>> {
    const outcome = await this.runs.transaction(async (tx) => {
      const run = await tx.lock(runId);
      if (!run) return { ack: { ok: false, error: 'No such run.' } };
      if (TERMINAL_STATUSES.includes(run.status)) return { ack: { ok: true } };
      if (run.agentId !== agentId)
        return { ack: { ok: false, error: 'This run is not assigned to this agent.' } };
      if (finished.lastSeq > run.lastBatchSeq) {
        return {
          ack: {
            ok: false,
            error: `Batches up to ${finished.lastSeq} are not all stored (have ${run.lastBatchSeq}); resend them first.`,
          },
        };
      }
      const r = finished.result;
      const now = this.clock.now();
      run.finishedAt = now;
      run.leaseExpiresAt = null;
      run.workloads = r.workloads;
      run.metrics = r.metrics;
      run.detail = r.detail ?? null;
      run.message = r.message;
      if (finished.canceled) {
        run.status = 'canceled';
      } else if (r.status === 'succeeded') {
        run.status = 'succeeded';
        run.score = r.score;
        run.failureCode = null;
      } else {
        run.status = 'failed';
        run.failureCode = r.failureCode ?? 'harness_error';
        run.score = null;
        // Stopped at the whole-run deadline: name the limit that applied (the organizer may have
        // lowered it while the run was going).
        if (
          run.failureCode === 'timeout' &&
          run.deadlineAt &&
          now.getTime() >= run.deadlineAt.getTime() - 1000
        )
          run.message = `${r.message} The whole-run time limit in force was ${run.runTimeLimitSeconds} s.`;
      }
      // Infrastructure failures are ours, not the team's: they do not count against the daily limit.
      if (run.failureCode === 'infra_error') run.quotaRefunded = true;
      await tx.save(run);
      return { ack: { ok: true }, run };
    });
    if (outcome.run) await this.announceFinal(outcome.run);
    return outcome.ack;
  }

  /** The agent stopped renewing its lease: the run fails as infra_error and is never run again. */
  async failForLostLease(runId: string, agentId: string, reason: string): Promise<boolean> {
    return this.failActive(
      runId,
      agentId,
      'infra_error',
      `The GPU agent stopped responding (${reason}). This is not your engine's fault; retry once.`,
    );
  }

  async failInfra(runId: string, agentId: string | null, message: string): Promise<boolean> {
    return this.failActive(runId, agentId, 'infra_error', message);
  }

  /** The server enforces the whole-run limit even when no agent reports. */
  async failForDeadline(runId: string): Promise<boolean> {
    const run = await this.runs.findById(runId);
    if (!run || !ACTIVE_STATUSES.includes(run.status)) return false;
    const limit = run.runTimeLimitSeconds;
    const res = await this.runsService.cancelRun(
      runId,
      `Canceled: the run exceeded the organizer's whole-run time limit of ${limit} s.`,
      `whole-run time limit (${limit} s) exceeded`,
    );
    return res.changed;
  }

  private async failActive(
    runId: string,
    agentId: string | null,
    code: 'infra_error',
    message: string,
  ): Promise<boolean> {
    const set: Record<string, unknown> = {
      status: 'failed',
      failure_code: code,
      message,
      finished_at: this.clock.now(),
      lease_expires_at: null,
      quota_refunded: true,
    };
    const run = await this.runs.transition(runId, ['queued', 'assigned', 'running'], set);
    if (!run) return false;
    if (agentId && run.agentId !== agentId)
      this.logger.warn(`run ${runId} failed for agent ${agentId} but belonged to ${run.agentId}`);
    await this.announceFinal(run);
    return true;
  }

  private async announceFinal(run: RunEntity): Promise<void> {
    const view = await this.runsService.view(run);
    this.bus.emit('run.status', { run: view });
    this.bus.emit('run.result', { runId: run.id, result: await this.runsService.resultOf(run) });
    this.bus.emit('run.finished', { runId: run.id, agentId: run.agentId, slot: run.slot });
    if (run.mode === 'official' && run.status === 'succeeded')
      this.bus.emit('leaderboard.changed', { benchmarkId: run.benchmarkId });
  }
}
