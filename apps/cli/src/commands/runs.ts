import { randomUUID } from 'node:crypto';
import {
  CancelRunResponse,
  CreateRunResponse,
  LOG_STREAM_MARK,
  LogLine,
  LogsPage,
  Paginated,
  PublicBenchmark,
  QuotaView,
  RankView,
  renderLogText,
  RunMode,
  RunResultView,
  RunStatus,
  RunView,
  SubmissionView,
  isWholeRunLimitCancel,
} from '@dryft/libs';
import type { Context } from '../context';
import { CliError, EXIT } from '../errors';
import { ApiClient, ApiError } from '../http';
import { isTerminal, LogFollower, waitForRun } from '../live';
import {
  bar,
  evenlySpaced,
  formatDuration,
  formatNumber,
  formatScore,
  formatScoreInterval,
  shortTime,
  sparkline,
  statusColour,
} from '../output';

export function notFoundHint(err: unknown, what: 'submission' | 'run', id: string): never {
  if (err instanceof ApiError && err.status === 404) {
    const hint =
      what === 'submission'
        ? 'Copy the Submission ID from the submission’s Details panel (or `dryft submissions`); the number in “Submission #7” is not an API ID.'
        : 'Copy the Run ID beside the run heading (or `dryft runs`).';
    throw new CliError(EXIT.badInput, `No ${what} ${id} in your team. ${hint}`, err.code);
  }
  throw err;
}

export async function getBenchmark(api: ApiClient, id: string): Promise<PublicBenchmark> {
  try {
    return await api.call(PublicBenchmark, `/api/benchmarks/${encodeURIComponent(id)}`);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      throw new CliError(
        EXIT.badInput,
        `There is no benchmark "${id}". \`dryft doctor\` lists the benchmarks of this hub.`,
        err.code,
      );
    }
    throw err;
  }
}

/**
 * Checks --tier/--dataset against the benchmark before anything is sent: a tiered benchmark needs
 * a tier, and a tier with practice datasets needs one of them (the single-file page's rule).
 */
export function checkTierAndDataset(
  b: PublicBenchmark,
  tier?: string,
  dataset?: string,
): { tier?: string; dataset?: string; ranked: boolean } {
  if (!b.tiers || b.tiers.length === 0) {
    if (tier || dataset)
      throw new CliError(EXIT.badInput, `${b.id} has no tiers or datasets; leave out --tier and --dataset.`);
    return { ranked: true };
  }
  const ids = b.tiers.map((t) => t.id).join(', ');
  if (!tier) throw new CliError(EXIT.badInput, `${b.id} needs --tier (one of: ${ids}).`);
  const t = b.tiers.find((x) => x.id === tier.toLowerCase());
  if (!t) throw new CliError(EXIT.badInput, `${b.id} has no tier "${tier}"; choose one of: ${ids}.`);
  if (t.datasets.length > 0) {
    const ds = t.datasets.map((d) => d.id).join(', ');
    if (!dataset) throw new CliError(EXIT.badInput, `The ${t.title} tier needs --dataset (one of: ${ds}).`);
    if (!t.datasets.some((d) => d.id === dataset))
      throw new CliError(
        EXIT.badInput,
        `The ${t.title} tier has no dataset "${dataset}"; choose one of: ${ds}.`,
      );
  } else if (dataset) {
    throw new CliError(
      EXIT.badInput,
      `The ${t.title} tier uses its own hidden evaluation; leave out --dataset.`,
    );
  }
  return { tier: t.id, dataset: t.datasets.length > 0 ? dataset : undefined, ranked: t.ranked };
}

export interface RunRequest {
  submission: SubmissionView;
  benchmark: PublicBenchmark;
  mode: RunMode;
  tier?: string;
  dataset?: string;
  yes?: boolean;
  /** The caller's key for this intended run (`--idempotency-key`); a new uuid when absent. */
  idempotencyKey?: string;
}

/** Today's standing in one daily-limit bucket (the tier, else the mode); undefined on a hub without /api/quota. */
export async function fetchQuota(
  api: ApiClient,
  benchmarkId: string,
  bucket: string,
): Promise<QuotaView | undefined> {
  try {
    const quotas = await api.call(QuotaView.array().or(QuotaView), '/api/quota', {
      query: { benchmark: benchmarkId },
    });
    return (Array.isArray(quotas) ? quotas : [quotas]).find((x) => x.bucket === bucket);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return undefined;
    throw err;
  }
}

/** " You have 2 of 3 left today (UTC)." or "" when the bucket has no limit. */
export function quotaLeftText(q: QuotaView | undefined): string {
  if (!q || q.limit === null) return '';
  const granted = q.granted ? ` (${q.granted} extra granted by an organizer)` : '';
  return ` You have ${q.remaining} of ${q.limit} left today (UTC)${granted}.`;
}

/** Asks before an official run (or refuses without a TTY and without --yes). */
export async function confirmRun(ctx: Context, api: ApiClient, r: RunRequest): Promise<void> {
  if (r.mode !== 'official' || r.yes) return;
  if (!ctx.interactive) {
    throw new CliError(
      EXIT.badInput,
      'Official runs count toward the leaderboard and the daily limit, so they need confirmation. There is no terminal to ask on: pass --yes to confirm.',
      'confirmation_required',
    );
  }
  let quotaText = '';
  try {
    quotaText = quotaLeftText(await fetchQuota(api, r.benchmark.id, r.tier ?? 'official'));
  } catch {
    /* the quota is a courtesy in the question; the server enforces it */
  }
  const what = `${r.submission.name} on ${r.benchmark.title}${r.tier ? `, tier ${r.tier}` : ''}${r.dataset ? `, dataset ${r.dataset}` : ''}`;
  const ok = await ctx.confirm(
    `Start an OFFICIAL run of ${what}? It counts for the leaderboard.${quotaText}`,
  );
  if (!ok)
    throw new CliError(
      EXIT.badInput,
      'Not started. Use --mode public for feedback without ranking.',
      'not_confirmed',
    );
}

/** The hub's rule for an Idempotency-Key: 1–200 visible ASCII characters. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,200}$/;

/** Creates the run with one Idempotency-Key for this intended run, reused on every retry. */
export async function createRun(ctx: Context, api: ApiClient, r: RunRequest) {
  if (r.idempotencyKey !== undefined && !IDEMPOTENCY_KEY.test(r.idempotencyKey))
    throw new CliError(
      EXIT.badInput,
      '--idempotency-key takes 1–200 visible ASCII characters (a uuid is ideal); nothing was started.',
      'invalid_idempotency_key',
    );
  const key = r.idempotencyKey ?? randomUUID();
  const body = {
    mode: r.mode,
    ...(r.tier ? { tier: r.tier } : {}),
    ...(r.dataset ? { dataset: r.dataset } : {}),
    ...(r.mode === 'official' ? { confirm: true } : {}),
  };
  try {
    const { value } = await api.postIdempotent(
      CreateRunResponse,
      `/api/submissions/${encodeURIComponent(r.submission.id)}/runs`,
      body,
      {
        key,
        baseDelayMs: Number(ctx.env.DRYFT_RETRY_BASE_MS) || 500,
        onRetry: (why, attempt) =>
          ctx.out.note(
            `Run request uncertain (${why}); retrying with the same Idempotency-Key (attempt ${attempt + 1}).`,
          ),
      },
    );
    return value;
  } catch (err) {
    // A daily run limit (a rate limit already says when to retry).
    if (err instanceof ApiError && err.status === 429 && err.code !== 'rate_limited') {
      throw new ApiError(
        err.status,
        err.code,
        `${err.message.split('\n')[0]}\nThe daily limit resets at 00:00 UTC; \`dryft runs\` shows today's runs.`,
        err.details,
      );
    }
    throw err;
  }
}

export function describeRun(run: RunView): string {
  const parts = [
    `${run.mode}`,
    run.tier ? `tier ${run.tier}` : '',
    run.dataset ? `dataset ${run.dataset}` : '',
  ].filter(Boolean);
  return parts.join(', ');
}

/** A training run (it has a tier) scores accuracy in percent; decode runs score points. */
function scoreText(run: RunView, score: number | null = run.score): string {
  return run.tier && score !== null ? `${formatScore(score)}%` : formatScore(score);
}

function paintStatus(ctx: Context, status: RunStatus, err = false): string {
  return ctx.out.paint(statusColour(status), status, err);
}

export function exitForRun(run: RunView): number {
  if (run.status === 'succeeded') return EXIT.ok;
  if (run.status === 'failed' || run.status === 'canceled') return EXIT.runFailed;
  return EXIT.ok;
}

/** Waits for the run with a progress line on stderr, then prints how it ended. */
export async function waitAndReport(
  ctx: Context,
  api: ApiClient,
  run: RunView,
  seconds: number,
): Promise<{ run: RunView; exit: number }> {
  const timeoutMs = seconds * 1000;
  let lastStatus = run.status;
  let lastReason: string | null = null;
  let suggested = false;
  const { run: final, timedOut } = await waitForRun({
    api,
    runId: run.id,
    timeoutMs,
    pollMs: ctx.pollMs,
    onNotice: (m) => ctx.out.note(m),
    onUpdate: (r, elapsed) => {
      if (r.status !== lastStatus && !ctx.out.progressEnabled && !ctx.json)
        ctx.out.note(`run ${r.id}: ${r.status}`);
      lastStatus = r.status;
      // Why it waits: said once per change, on its own line, with the suggestion to cancel.
      if (r.waiting && r.waiting.reason !== lastReason && !ctx.json)
        ctx.out.note(`waiting: ${r.waiting.reason}`);
      if (r.waiting?.suggestCancel && !suggested && !ctx.json) {
        suggested = true;
        ctx.out.note(
          `No capable agent has been seen for a while: \`dryft cancel ${r.id} --reason "no agent"\` is refunded (it never started).`,
        );
      }
      lastReason = r.waiting?.reason ?? null;
      const eta = r.waiting
        ? r.waiting.etaSeconds === null
          ? ', no estimate'
          : `, starts in ~${formatDuration(r.waiting.etaSeconds)}${r.waiting.etaIsGuess ? ' (guess)' : ''}`
        : '';
      const q = r.queuePosition ? ` (queue position ${r.queuePosition}${eta})` : '';
      ctx.out.progress(
        `${bar(elapsed / timeoutMs)} ${r.status}${q}  ${formatDuration(elapsed / 1000)} of ${formatDuration(seconds)}`,
      );
    },
  });
  ctx.out.clearProgress();
  if (timedOut) {
    if (ctx.json) ctx.out.data({ run: final, timedOut: true });
    else
      ctx.out.line(
        `Still ${final.status} after ${formatDuration(seconds)}. Follow it with \`dryft result ${final.id} --wait\` or \`dryft logs ${final.id} --follow\`.`,
      );
    return { run: final, exit: EXIT.waitTimeout };
  }
  return { run: final, exit: exitForRun(final) };
}

/** What the runs table adds to a status: the failure code, or that the whole-run limit canceled it. */
function statusNote(run: RunView): string {
  if (run.failureCode) return ` (${run.failureCode})`;
  return run.status === 'canceled' && isWholeRunLimitCancel(run.cancelReason) ? ' (whole-run limit)' : '';
}

export function printRunLine(ctx: Context, run: RunView): void {
  ctx.out.line(
    `Run ${run.id}: ${paintStatus(ctx, run.status)} (${describeRun(run)})${run.score !== null ? `, score ${scoreText(run)}` : ''}`,
  );
  if (run.failureCode) ctx.out.line(`  ${ctx.out.paint('red', run.failureCode)}: ${run.message ?? ''}`);
  else if (run.message && run.status !== 'succeeded') ctx.out.line(`  ${run.message}`);
  if (run.cancelReason) ctx.out.line(`  canceled: ${run.cancelReason}`);
  if (run.quotaRefunded) ctx.out.line('  Refunded: this run does not count against the daily limit.');
  if (run.status === 'failed' && (run.failureCode === 'infra_error' || run.failureCode === 'harness_error')) {
    ctx.out.line(
      '  This is an infrastructure failure: retry once; if it persists, contact the organizer with the full Run ID, the message and the time.',
    );
  }
}

/** `dryft run SUBMISSION_ID --mode public|official [--tier --dataset] [--wait SECONDS]` */
export async function runCmd(
  ctx: Context,
  submissionId: string,
  opts: {
    mode?: string;
    tier?: string;
    dataset?: string;
    wait?: string;
    yes?: boolean;
    idempotencyKey?: string;
  },
): Promise<number> {
  const { api } = await ctx.api();
  const wait = opts.wait !== undefined ? parseSeconds(opts.wait, '--wait') : undefined;
  const submission = await api
    .call(SubmissionView, `/api/submissions/${encodeURIComponent(submissionId)}`)
    .catch((e) => notFoundHint(e, 'submission', submissionId));
  const benchmark = await getBenchmark(api, submission.benchmarkId);
  const td = checkTierAndDataset(benchmark, opts.tier, opts.dataset);
  const mode = RunMode.parse(opts.mode ?? (benchmark.tiers?.length && td.ranked ? 'official' : 'public'));
  return startAndReport(
    ctx,
    api,
    {
      submission,
      benchmark,
      mode,
      tier: td.tier,
      dataset: td.dataset,
      yes: opts.yes,
      idempotencyKey: opts.idempotencyKey,
    },
    wait,
  );
}

export async function startAndReport(
  ctx: Context,
  api: ApiClient,
  req: RunRequest,
  wait: number | undefined,
): Promise<number> {
  await confirmRun(ctx, api, req);
  const created = await createRun(ctx, api, req);
  const run = created.run;
  if (wait === undefined) {
    if (ctx.json) ctx.out.data(created);
    else {
      ctx.out.line(
        `Started ${run.mode} run ${run.id} of ${req.submission.name}: ${run.status}${run.queuePosition ? ` (queue position ${run.queuePosition})` : ''}.`,
      );
      if (created.quota.limit !== null)
        ctx.out.line(
          `Daily limit (${created.quota.bucket}): ${created.quota.remaining} of ${created.quota.limit} left${created.quota.refunded ? ` (${created.quota.refunded} refunded, not counted)` : ''}, resets ${shortTime(created.quota.resetsAt)} UTC.`,
        );
      ctx.out.line(`Follow it: dryft logs ${run.id} --follow    Result: dryft result ${run.id} --wait`);
    }
    return EXIT.ok;
  }
  if (!ctx.json) ctx.out.note(`Started ${run.mode} run ${run.id}; waiting up to ${formatDuration(wait)}.`);
  const done = await waitAndReport(ctx, api, run, wait);
  if (done.exit === EXIT.waitTimeout) return done.exit;
  if (ctx.json) ctx.out.data({ ...created, run: done.run });
  else printRunLine(ctx, done.run);
  return done.exit;
}

export function parseSeconds(v: string, flag: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0)
    throw new CliError(EXIT.badInput, `${flag} takes a number of seconds, e.g. ${flag} 3000.`);
  return n;
}

/** `dryft runs` */
export async function runsCmd(
  ctx: Context,
  opts: { benchmark?: string; status?: string; limit?: string; cursor?: string },
): Promise<number> {
  const { api } = await ctx.api();
  if (opts.status && !RunStatus.safeParse(opts.status).success) {
    throw new CliError(EXIT.badInput, `--status is one of: ${RunStatus.options.join(', ')}.`);
  }
  const benchmark = opts.benchmark === 'all' ? undefined : await ctx.benchmarkId(opts.benchmark);
  const page = await api.call(Paginated(RunView), '/api/runs', {
    query: { benchmark, status: opts.status, limit: opts.limit ?? 20, cursor: opts.cursor },
  });
  if (ctx.json) {
    ctx.out.data(page);
    return EXIT.ok;
  }
  if (page.items.length === 0) {
    ctx.out.line('No runs yet. Start one with `dryft run SUBMISSION_ID --mode public`.');
    return EXIT.ok;
  }
  ctx.out.table(
    ['RUN ID', 'MODE', 'STATUS', 'SCORE', 'SUBMISSION', 'BENCHMARK', 'CREATED (UTC)'],
    page.items.map((r) => [
      r.id,
      r.mode + (r.tier ? `/${r.tier}` : ''),
      ctx.out.paint(statusColour(r.status), r.status + statusNote(r)),
      formatScore(r.score),
      r.submissionName,
      r.benchmarkId,
      shortTime(r.createdAt),
    ]),
  );
  if (page.nextCursor) ctx.out.line(`More: dryft runs --cursor ${page.nextCursor}`);
  return EXIT.ok;
}

/**
 * One stored log line for people: every row starts with its stream's mark (`[out]` for what the
 * submission printed, `[harness]`, `[agent]`, `[system]`), so an engine can never print a line that
 * passes for the harness's. On a terminal only colour (SGR) is rendered; every other control byte
 * (cursor moves, erase, titles, BEL) is shown escaped, and a `\r` progress bar shows its last frame.
 * `--raw` prints the stored bytes as they are; `--json` one JSON object per line.
 */
function printLogLine(ctx: Context, line: LogLine, raw = false): void {
  if (ctx.json) {
    ctx.out.ndjson(line);
    return;
  }
  const mark = ctx.out.paint('gray', LOG_STREAM_MARK[line.stream]);
  if (raw) {
    ctx.out.line(`${mark} ${line.text}`);
    return;
  }
  for (const row of line.text.split('\n'))
    ctx.out.line(`${mark} ${renderLogText(row, { colour: ctx.out.colour })}`);
}

/** `dryft logs RUN_ID [--follow] [--after SEQ]` */
export async function logsCmd(
  ctx: Context,
  runId: string,
  opts: { follow?: boolean; after?: string; raw?: boolean },
): Promise<number> {
  const { api, token } = await ctx.api();
  const after = opts.after !== undefined ? Number(opts.after) : 0;
  if (!Number.isInteger(after) || after < 0)
    throw new CliError(EXIT.badInput, '--after takes a line number (seq), e.g. --after 120.');
  if (!opts.follow) {
    let cursor = after;
    for (;;) {
      const page = await api
        .call(LogsPage, `/api/runs/${encodeURIComponent(runId)}/logs`, {
          query: { after: cursor, limit: 500 },
        })
        .catch((e) => notFoundHint(e, 'run', runId));
      for (const line of page.items) printLogLine(ctx, line, opts.raw);
      if (page.items.length === 0 || page.nextAfter <= cursor) break;
      cursor = page.nextAfter;
    }
    return EXIT.ok;
  }
  // Fail fast on a wrong id or token before opening the live connection.
  const run = await api
    .call(RunView, `/api/runs/${encodeURIComponent(runId)}`)
    .catch((e) => notFoundHint(e, 'run', runId));
  if (!ctx.json)
    ctx.out.note(
      `Following run ${run.id} (${describeRun(run)}, ${run.status}); Ctrl-C stops following, not the run.`,
    );
  let shownStatus = run.status;
  const follower = new LogFollower({
    api,
    token,
    runId: run.id,
    afterSeq: after,
    pollMs: ctx.pollMs,
    socketFactory: ctx.socketFactory,
    onLine: (line) => printLogLine(ctx, line, opts.raw),
    onNotice: (m) => ctx.out.note(m),
    onStatus: (r) => {
      if (r.status === shownStatus || ctx.json) return;
      shownStatus = r.status;
      const where = r.agentName
        ? ` on ${r.agentName}`
        : r.queuePosition
          ? ` (queue position ${r.queuePosition})`
          : '';
      ctx.out.note(ctx.out.paint(statusColour(r.status), `-- run ${r.status}${where}`, true));
    },
  });
  const final = await follower.run();
  if (ctx.json) ctx.out.ndjson({ run: final });
  else {
    ctx.out.note('');
    printRunLineTo(ctx, final);
  }
  return exitForRun(final);
}

function printRunLineTo(ctx: Context, run: RunView): void {
  const s = `Run ${run.id} ${run.status}${run.failureCode ? ` (${run.failureCode}: ${run.message ?? ''})` : ''}${run.score !== null ? `, score ${formatScore(run.score)}` : ''}${run.quotaRefunded ? ' (refunded: not counted against the daily limit)' : ''}.`;
  ctx.out.note(s);
}

/** `dryft result RUN_ID [--wait] [--timeout S]` */
export async function resultCmd(
  ctx: Context,
  runId: string,
  opts: { wait?: boolean; timeout?: string },
): Promise<number> {
  const { api } = await ctx.api();
  let run = await api
    .call(RunView, `/api/runs/${encodeURIComponent(runId)}`)
    .catch((e) => notFoundHint(e, 'run', runId));
  if (opts.wait && !isTerminal(run)) {
    const seconds = opts.timeout !== undefined ? parseSeconds(opts.timeout, '--timeout') : 3600;
    const done = await waitAndReport(ctx, api, run, seconds);
    if (done.exit === EXIT.waitTimeout) return done.exit;
    run = done.run;
  }
  const result = await api.call(RunResultView, `/api/runs/${encodeURIComponent(run.id)}/result`);
  if (ctx.json) {
    ctx.out.data(result);
    return exitForRun(result.run);
  }
  printRunLine(ctx, result.run);
  if (!isTerminal(result.run))
    ctx.out.line(
      `  Not finished yet (${result.run.status}); results so far. Add --wait to wait for the end.`,
    );
  if (result.score !== null)
    ctx.out.line(
      `Score: ${ctx.out.paint('bold', scoreText(result.run, result.score))}${formatScoreInterval(result.interval, result.pairs)}${result.run.mode === 'official' ? ' (official)' : result.indicative ? ' (public, indicative: one sample per workload; never ranked)' : ' (public: feedback only, never ranked)'}`,
    );
  // Through a calibrated K: the interval with K's folded in (the one above ranks), and what was measured.
  if (result.score !== null && result.absoluteInterval)
    ctx.out.line(
      `  Absolute interval (with K's): ${result.absoluteInterval.low.toFixed(2)}–${result.absoluteInterval.high.toFixed(2)}`,
    );
  if (result.score !== null && result.scoring) ctx.out.line(`  ${result.scoring.note}`);
  if (result.detail) {
    ctx.out.line('Detail:');
    for (const l of result.detail.split('\n').slice(0, 40)) ctx.out.line(`  ${l}`);
  }
  if (result.checks.length) {
    ctx.out.line('');
    ctx.out.table(
      ['CHECK', 'RESULT', 'DETAIL'],
      result.checks.map((c) => [
        c.name,
        c.passed ? ctx.out.paint('green', 'pass') : ctx.out.paint('red', 'FAIL'),
        c.detail,
      ]),
    );
  }
  if (result.workloads.length) {
    ctx.out.line('');
    const n = (v: number | null, d = 2) => (v === null ? '-' : v.toFixed(d));
    ctx.out.table(
      ['WORKLOAD', 'SAMPLES', 'TPS', 'TTFT ms', 'TPOT ms', 'SPREAD %', 'SPEEDUP'],
      result.workloads.map((w) => [
        w.workload,
        String(w.samples),
        n(w.tps, 1),
        n(w.ttftMs),
        n(w.tpotMs, 3),
        n(w.spreadPct, 1),
        n(w.speedup, 3),
      ]),
    );
  }
  printCurves(ctx, result.curve ?? []);
  printSamples(ctx, result.samples);
  const metrics = Object.entries(result.metrics);
  if (metrics.length) {
    ctx.out.line('');
    ctx.out.table(
      ['METRIC', 'VALUE'],
      metrics.map(([k, v]) => [k, typeof v === 'number' ? formatNumber(v) : String(v)]),
    );
  }
  return exitForRun(result.run);
}

/** Training: each progress metric (loss, accuracy…) as a one-line chart and a few of its points. */
function printCurves(ctx: Context, curve: NonNullable<RunResultView['curve']>): void {
  const byName = new Map<string, typeof curve>();
  for (const p of curve) byName.set(p.name, [...(byName.get(p.name) ?? []), p]);
  for (const [name, points] of byName) {
    const first = points[0];
    const last = points[points.length - 1];
    ctx.out.line('');
    ctx.out.line(
      `${ctx.out.paint('bold', name)} over ${points.length} point(s), steps ${first.step}–${last.step}: ${formatNumber(first.value)} → ${formatNumber(last.value)}`,
    );
    ctx.out.line(`  ${sparkline(points.map((p) => p.value))}`);
    ctx.out.table(
      ['STEP', name.toUpperCase(), 'ELAPSED'],
      evenlySpaced(points, 8).map((p) => [
        String(p.step),
        formatNumber(p.value),
        formatDuration(p.elapsedMs / 1000),
      ]),
    );
  }
}

/** Decode: every timed sample, with a bar of its total time against the slowest one of its workload. */
function printSamples(ctx: Context, samples: RunResultView['samples']): void {
  const timed = samples.filter((s) => !s.warmup);
  if (timed.length === 0) return;
  const slowest = new Map<string, number>();
  for (const s of timed) slowest.set(s.workload, Math.max(slowest.get(s.workload) ?? 0, s.totalMs));
  const n = (v: number | null, d: number) => (v === null ? '-' : v.toFixed(d));
  ctx.out.line('');
  ctx.out.line(
    `${ctx.out.paint('bold', 'Timed samples')} (${samples.length - timed.length} warm-up sample(s) not shown)`,
  );
  ctx.out.table(
    ['WORKLOAD', '#', 'TOTAL ms', 'TTFT ms', 'TPOT ms', 'TPS', ''],
    timed.map((s) => [
      s.workload,
      String(s.index),
      n(s.totalMs, 1),
      n(s.ttftMs, 2),
      n(s.tpotMs, 3),
      n(s.tps, 1),
      bar(s.totalMs / (slowest.get(s.workload) || 1), 16),
    ]),
  );
}

/** `dryft rank RUN_ID` */
export async function rankCmd(ctx: Context, runId: string): Promise<number> {
  const { api } = await ctx.api();
  const rank = await api
    .call(RankView, `/api/runs/${encodeURIComponent(runId)}/rank`)
    .catch((e) => notFoundHint(e, 'run', runId));
  if (ctx.json) {
    ctx.out.data(rank);
    return EXIT.ok;
  }
  ctx.out.line(
    `Run ${rank.runId} (${rank.mode}, ${rank.status}) on ${rank.benchmarkId}: score ${formatScore(rank.score)}${formatScoreInterval(rank.interval, rank.pairs)}`,
  );
  if (rank.eligible && rank.rank !== null) {
    ctx.out.line(
      `Rank ${ctx.out.paint('bold', String(rank.rank))} of ${rank.entries}${rank.isBest ? ' — your current best on the board' : ' — not your best; the board keeps your best score'}.`,
    );
  } else {
    ctx.out.line(`Not ranked: ${rank.reason}`);
  }
  return EXIT.ok;
}

/** `dryft cancel RUN_ID --reason TEXT` */
export async function cancelCmd(ctx: Context, runId: string, opts: { reason: string }): Promise<number> {
  const { api } = await ctx.api();
  const reason = opts.reason.trim();
  if (!reason) throw new CliError(EXIT.badInput, 'Say why with --reason "…" (shown in the run history).');
  const res = await api
    .call(CancelRunResponse, `/api/runs/${encodeURIComponent(runId)}/cancel`, {
      method: 'POST',
      json: { reason },
    })
    .catch((e) => notFoundHint(e, 'run', runId));
  if (ctx.json) ctx.out.data(res);
  else {
    ctx.out.line(res.message);
    ctx.out.line(`Run ${res.run.id}: ${res.run.status}${res.changed ? '' : ' (unchanged)'}`);
  }
  return EXIT.ok;
}
