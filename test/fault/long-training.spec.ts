import { existsSync, mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wholeRunLimitCancelReason, wholeRunLimitMessage } from '@dryft/libs';
import type { MetricView, RunView } from '@dryft/libs';
import {
  AgentProc,
  ApiProc,
  HttpUser,
  spawnAgent,
  startApi,
  stopProc,
  terminal,
  until,
} from '../support/agent-helpers';
import { createTestDatabase } from '../support/db';
import {
  chattySubmission,
  CurveWatcher,
  judgeCurve,
  LONG_LOG_CAP,
  longAllowanceSeconds,
  longTrainingBenchmarks,
  metricEverySeconds,
} from '../support/long-training';
import { available, pythonWithTorch } from '../support/prerequisites';
import { AGENT_MAIN, freePort, ROOT } from '../support/quickstart';

/**
 * "The hour holds" (issue 35, item 2): a training run through the real API, agent and harness on
 * the CPU for its whole allowance, while the API is killed and started again, a `/live` watcher's
 * connection drops, and the log cap is reached; then a run whose limit the organizer lowers while
 * its agent is out of touch. `npm test` runs it with 15 s of training; `npm run test:long` with
 * DRYFT_LONG_ALLOWANCE seconds (default 1800).
 */
const ALLOWANCE = longAllowanceSeconds();
const METRIC_EVERY = metricEverySeconds(ALLOWANCE);
const DEADLINE_GRACE_SECONDS = 5;
/** The agent's TERM → KILL grace (spawnAgent's cancelGraceMs), in seconds. */
const AGENT_STOP_GRACE_SECONDS = 1;
const python = pythonWithTorch();
const TEST_MS = (ALLOWANCE * 2 + 150) * 1000;

describe.skipIf(
  !existsSync(AGENT_MAIN) ||
    !available('a Python with torch', python !== null, 'apt-get install python3-torch'),
)(
  `the hour holds: a training run of ${ALLOWANCE} s through restarts, reconnects, the log cap and a lowered limit`,
  () => {
    let db: { url: string; drop: () => Promise<void> };
    let port: number;
    let dataDir: string;
    let benchmarks: { dir: string; runTimeLimitSeconds: number };
    let api: ApiProc;
    let agent: AgentProc;
    let org: HttpUser;
    let owner: HttpUser;

    const boot = () =>
      startApi({
        dbUrl: db.url,
        port,
        dataDir,
        env: {
          ADMIN_LOGINS: 'long-org',
          BENCHMARKS_DIR: benchmarks.dir,
          HARNESS_PYTHON: python!,
          DEADLINE_GRACE_SECONDS: String(DEADLINE_GRACE_SECONDS),
          LOG_LEVEL: 'log',
        },
      });
    const connections = () => agent.output().split(/connected to .* as "/).length - 1;

    /** Kills the API (`kill -9`) and starts it again on the same database and port. */
    async function restartApi(between?: () => Promise<void>): Promise<number> {
      const downAt = Date.now();
      await stopProc(api, 'SIGKILL');
      api = await boot();
      await between?.();
      return Date.now() - downAt;
    }

    async function train(): Promise<{ run: RunView; watcher: CurveWatcher }> {
      const up = new FormData();
      up.set('benchmark', 'recurrence-cpu');
      up.set('file', new Blob([chattySubmission(ALLOWANCE)]), 'submission.py');
      const uploaded = await owner.req('POST', '/api/submissions', up);
      expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(201);
      const created = await owner.post(`/api/submissions/${uploaded.body.submission.id}/runs`, {
        mode: 'public',
        tier: 'practice',
        dataset: 'square',
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const run = created.body.run as RunView;
      const watcher = new CurveWatcher(api.url, { cookie: owner.cookie });
      expect((await watcher.join(run.id)).ok).toBe(true);
      return { run, watcher };
    }

    const result = async (runId: string) =>
      (
        await owner.get<{ metrics: Record<string, number>; curve?: MetricView[] }>(
          `/api/runs/${runId}/result`,
        )
      ).body;

    beforeAll(async () => {
      db = await createTestDatabase();
      port = await freePort();
      dataDir = path.join(ROOT, '.data', 'test', `long-training-${process.pid}-${Date.now()}`);
      mkdirSync(dataDir, { recursive: true });
      benchmarks = longTrainingBenchmarks(ALLOWANCE);
      api = await boot();
      org = await HttpUser.signIn(api.url, 'long-org');
      owner = await HttpUser.signIn(api.url, 'long-owner');
      await owner.createTeam();
      agent = spawnAgent({
        apiUrl: api.url,
        token: (await org.createAgent('long-box')).token,
        dir: path.join(dataDir, 'agent'),
        config: { cancelGraceMs: AGENT_STOP_GRACE_SECONDS * 1000, harness: { python } },
      });
      await until('the agent connected', () => connections() > 0 || null, 60_000);
    });

    afterAll(async () => {
      if (agent?.child.signalCode === null) agent.child.kill('SIGCONT');
      await stopProc(agent, 'SIGKILL');
      await stopProc(api);
      await db?.drop().catch(() => undefined);
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
      if (benchmarks) rmSync(benchmarks.dir, { recursive: true, force: true });
    });

    it(
      'trains for its whole allowance across an API kill, a watcher reconnect and the log cap: every loss point and line, succeeded',
      async () => {
        const { run, watcher } = await train();
        try {
          // (a) The API is killed a quarter into training and started again; the agent reconnects.
          await until(
            'a quarter of the training',
            () => watcher.trainedSeconds >= ALLOWANCE * 0.25 || null,
            TEST_MS,
          );
          const before = connections();
          const restartMs = await restartApi();
          await until('the agent reconnected', () => connections() > before || null, 60_000);
          await until('the watcher rejoined', () => watcher.reconnects >= 1 || null, 30_000);
          // (b) The watcher's own connection drops at 45 %; it reconnects and rejoins from its last line.
          await until(
            '45 % of the training',
            () => watcher.trainedSeconds >= ALLOWANCE * 0.45 || null,
            TEST_MS,
          );
          watcher.cut();
          await until('the watcher reconnected', () => watcher.reconnects >= 2 || null, 30_000);

          const done = await owner.waitFor(run.id, terminal, TEST_MS);
          const res = await result(run.id);
          expect(done.status, `${done.message}\n${agent.output().slice(-3000)}`).toBe('succeeded');
          expect(done.finishedAt! <= done.deadlineAt!).toBe(true);
          // Trained for the allowance, to the second (the evaluator's own clock).
          expect(res.metrics.trainingAllowanceSeconds).toBe(ALLOWANCE);
          expect(Math.abs(res.metrics.trainingSeconds - ALLOWANCE)).toBeLessThan(1);

          // The loss curve: one point per cadence from the start to the end of training, none lost
          // across the restart or the reconnect, none stored twice.
          const curve = res.curve ?? [];
          const figures = judgeCurve(curve, METRIC_EVERY);
          expect(figures.repeats).toBe(0);
          expect(figures.gaps).toEqual([]);
          expect(curve[0].elapsedMs / 1000).toBeLessThan(METRIC_EVERY * 1.75);
          expect(ALLOWANCE - curve[curve.length - 1].elapsedMs / 1000).toBeLessThan(METRIC_EVERY * 1.75);
          expect(figures.points).toBeGreaterThanOrEqual(Math.floor((ALLOWANCE / METRIC_EVERY) * 0.5));

          // (c) The log cap was reached: lines 1..n stored, once each, with the one notice where the
          // middle was dropped; the head's chatter is contiguous through the restart.
          const stored = await owner.allLogs(run.id);
          expect(stored.map((l) => l.seq)).toEqual(stored.map((_, i) => i + 1));
          expect(stored.length).toBeLessThanOrEqual(LONG_LOG_CAP.maxLines);
          const notices = stored.filter((l) => / lines \(.+\) dropped here/.test(l.text));
          expect(notices, `${stored.length} lines stored`).toHaveLength(1);
          const at = stored.indexOf(notices[0]);
          const chatter = (lines: typeof stored) =>
            lines.filter((l) => /^chatter \d+$/.test(l.text)).map((l) => Number(l.text.split(' ')[1]));
          const head = chatter(stored.slice(0, at));
          expect(head).toEqual(head.map((_, i) => i + 1));
          const tail = chatter(stored.slice(at + 1));
          expect(tail).toEqual(tail.map((_, i) => tail[0] + i));
          // What the watcher saw live, across both reconnects, is what is stored.
          await until('the watcher caught up', () => watcher.lastSeq >= done.lastLogSeq || null, 30_000);
          watcher.assertContiguous();
          expect(watcher.lines.map((l) => [l.seq, l.text])).toEqual(stored.map((l) => [l.seq, l.text]));

          console.log(
            `[long] allowance ${ALLOWANCE} s, trained ${res.metrics.trainingSeconds} s; loss points ${figures.points} ` +
              `(cadence ${METRIC_EVERY} s, largest gap ${figures.maxGapSeconds} s, gaps ${figures.gaps.length}); ` +
              `API kill -9 and back in ${restartMs} ms; log ${stored.length} lines stored (cap ${LONG_LOG_CAP.maxLines}), ` +
              `chatter head ${head.length} + tail ${tail.length} lines; watcher reconnects ${watcher.reconnects}; ` +
              `finished ${((Date.parse(done.deadlineAt!) - Date.parse(done.finishedAt!)) / 1000).toFixed(1)} s before its deadline`,
          );
        } finally {
          watcher.close();
        }
      },
      TEST_MS,
    );

    it(
      'the organizer lowers the limit while the agent is out of touch: the reconnected agent stops the run at the new deadline, canceled with the limit in force named, within the grace',
      async () => {
        const { run, watcher } = await train();
        let limit = 0;
        try {
          // Mid-run, the agent is paused, the API killed and started again, and the limit lowered
          // while the agent is away: only its agent.ready's answer can tell it the new deadline.
          // The long form does it halfway through training; the scaled one as soon as the run is
          // running, since a restart on a loaded box can take 10 s of its 15.
          if (ALLOWANCE >= 60)
            await until('half the training', () => watcher.trainedSeconds >= ALLOWANCE / 2 || null, TEST_MS);
          else await owner.waitFor(run.id, (r) => r.status === 'running', TEST_MS);
          const assignedAt = Date.parse((await owner.run(run.id)).assignedAt!);
          agent.child.kill('SIGSTOP');
          const before = connections();
          await restartApi(async () => {
            limit = Math.max(10, Math.ceil((Date.now() - assignedAt) / 1000) + 4);
            const patched = await org.req('PATCH', '/api/admin/benchmarks/recurrence-cpu', {
              runTimeLimitSeconds: limit,
              reason: 'the long-run test lowers the limit mid-run',
            });
            expect(patched.status, JSON.stringify(patched.body)).toBe(200);
          });
          agent.child.kill('SIGCONT');
          const lowered = await owner.run(run.id);
          expect(Date.parse(lowered.deadlineAt!)).toBe(assignedAt + limit * 1000);
          await until('the agent reconnected', () => connections() > before || null, 60_000);

          const done = await owner.waitFor(run.id, terminal, TEST_MS);
          const res = await result(run.id);
          // The product page: a run over the whole-run limit is canceled with an explanation, naming
          // the limit in force (not "failed · timeout", which is a sample over its own budget).
          expect(
            {
              status: done.status,
              failureCode: done.failureCode,
              message: done.message,
              cancelReason: done.cancelReason,
            },
            agent.output().slice(-3000),
          ).toEqual({
            status: 'canceled',
            failureCode: null,
            message: wholeRunLimitMessage(limit),
            cancelReason: wholeRunLimitCancelReason(limit),
          });
          // It had started: it counts against the daily limit.
          expect(done.quotaRefunded).toBe(false);
          // Stopped at the deadline, not before it, and by the agent within its TERM → KILL grace,
          // long before the hub's own grace would have canceled it.
          const errorSeconds = (Date.parse(done.finishedAt!) - Date.parse(lowered.deadlineAt!)) / 1000;
          expect(errorSeconds).toBeGreaterThanOrEqual(0);
          expect(errorSeconds).toBeLessThan(AGENT_STOP_GRACE_SECONDS + 1);
          expect(errorSeconds).toBeLessThan(DEADLINE_GRACE_SECONDS);
          const figures = judgeCurve(res.curve ?? [], METRIC_EVERY);
          expect(figures.repeats).toBe(0);
          expect(figures.gaps).toEqual([]);
          console.log(
            `[long] limit lowered to ${limit} s mid-run while the agent was away: ${done.status}/${done.failureCode}, ` +
              `finished ${errorSeconds.toFixed(3)} s after the new deadline (agent grace ${AGENT_STOP_GRACE_SECONDS} s, ` +
              `hub grace ${DEADLINE_GRACE_SECONDS} s); loss points ${figures.points}, gaps ${figures.gaps.length}`,
          );
        } finally {
          watcher.close();
        }
      },
      TEST_MS,
    );
  },
);
