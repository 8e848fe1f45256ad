import { randomUUID } from 'node:crypto';
import { Paginated, RunMode, SubmissionView, UploadResponse } from '@dryft/libs';
import type { Context } from '../context';
import { CliError, EXIT } from '../errors';
import { ApiClient, multipart, NetworkError, sleep } from '../http';
import { checkLocal, detectKind } from '../local';
import { bar, formatBytes, shortTime } from '../output';
import { printVerdicts } from './local';
import {
  checkTierAndDataset,
  fetchQuota,
  getBenchmark,
  parseSeconds,
  quotaLeftText,
  startAndReport,
} from './runs';

export const DEFAULT_ARCHIVE_BENCHMARK = 'qwen3-4b-decode';
export const DEFAULT_FILE_BENCHMARK = 'deep-recurrence';

async function upload(
  ctx: Context,
  api: ApiClient,
  benchmark: string,
  name: string,
  content: Buffer,
): Promise<UploadResponse> {
  const { body, contentType } = multipart(
    { benchmark },
    { field: 'file', name, content, type: name.endsWith('.py') ? 'text/x-python' : 'application/gzip' },
  );
  const started = Date.now();
  // One key for this intended upload, kept across every retry: the hub answers a repeat with the
  // first upload's submission instead of storing it twice. The client itself sends the upload again
  // after a 429 rate_limited or 503 checker_busy wait (refused before anything was stored); here only
  // a connection that never opened is retried.
  const idempotencyKey = randomUUID();
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await api.raw('/api/submissions', {
        method: 'POST',
        body,
        headers: { 'content-type': contentType, 'idempotency-key': idempotencyKey },
        timeoutMs: 120_000,
        onUploadProgress: (sent, total) =>
          ctx.out.progress(
            `uploading ${bar(sent / total)} ${formatBytes(sent)} / ${formatBytes(total)}  ${((Date.now() - started) / 1000).toFixed(1)} s`,
          ),
      });
      ctx.out.clearProgress();
      if (res.status === 422) {
        const err = api.errorFrom(res);
        const verdicts = (
          err.details as
            { verdicts?: { rule: string; title: string; passed: boolean; problems: string[] }[] } | undefined
        )?.verdicts;
        if (verdicts && !ctx.json) {
          ctx.out.line('The hub refused the upload:');
          for (const v of verdicts.filter((x) => !x.passed)) {
            ctx.out.line(`  ${ctx.out.paint('red', 'FAIL')}  ${v.rule}: ${v.title}`);
            for (const p of v.problems) ctx.out.line(`        - ${p}`);
          }
        }
        throw new CliError(
          EXIT.badInput,
          `Upload refused (${err.code}): ${err.message}`,
          err.code,
          err.details,
        );
      }
      return api.parse(UploadResponse, res);
    } catch (err) {
      ctx.out.clearProgress();
      if (err instanceof NetworkError && !err.maybeProcessed && attempt < 3) {
        ctx.out.note(`Could not connect (${err.reason}); trying again.`);
        await sleep(1000 * attempt);
        continue;
      }
      throw err;
    }
  }
}

/** `dryft submit DIR|FILE [--benchmark --tier --dataset]` */
export async function submitCmd(
  ctx: Context,
  target: string,
  opts: {
    benchmark?: string;
    tier?: string;
    dataset?: string;
    mode?: string;
    wait?: string;
    yes?: boolean;
    uploadOnly?: boolean;
  },
): Promise<number> {
  const kind = await detectKind(target);
  const benchmarkId = (await ctx.benchmarkId(
    opts.benchmark,
    kind === 'file'
      ? { id: DEFAULT_FILE_BENCHMARK, why: 'the default for a submission.py' }
      : { id: DEFAULT_ARCHIVE_BENCHMARK, why: 'the default for an engine folder or archive' },
  ))!;
  const wait = opts.wait !== undefined ? parseSeconds(opts.wait, '--wait') : undefined;
  // Offline first: a folder that the hub would refuse never leaves the machine.
  const check = await checkLocal(target, kind);
  if (!check.ok || !check.bytes) {
    if (ctx.json) ctx.out.data({ ok: false, verdicts: check.verdicts });
    else {
      printVerdicts(ctx, check);
      ctx.out.line(
        `${ctx.out.paint('red', 'Not submitted')}: fix the FAIL lines above (\`dryft validate ${target}\` checks again).`,
      );
    }
    return EXIT.badInput;
  }
  const { api } = await ctx.api();
  const benchmark = await getBenchmark(api, benchmarkId);
  const expected = benchmark.submission.type === 'file' ? 'file' : 'archive';
  if ((kind === 'file') !== (expected === 'file')) {
    throw new CliError(
      EXIT.badInput,
      expected === 'file'
        ? `${benchmark.id} takes one ${benchmark.submission.filename ?? 'submission.py'} file, not ${kind === 'folder' ? 'a folder' : 'an archive'}.`
        : `${benchmark.id} takes an engine folder or a .tar.gz archive with engine.py at its root, not a single file.`,
    );
  }
  if (!benchmark.submissionsOpen) {
    throw new CliError(
      EXIT.badInput,
      `Submissions to ${benchmark.id} are closed right now${benchmark.announcement ? `: ${benchmark.announcement}` : ''}. Check the announcement for reopening.`,
      'submissions_closed',
    );
  }
  // A tiered (single-file) submission starts its run at once, so tier and dataset are checked, and
  // an official run confirmed, before anything is uploaded.
  const tiered = Boolean(benchmark.tiers?.length);
  if (opts.uploadOnly && (opts.mode || opts.wait || opts.yes)) {
    throw new CliError(
      EXIT.badInput,
      '--upload-only starts no run: leave out --mode, --wait and --yes (give them to `dryft run SUBMISSION_ID`).',
    );
  }
  let runPlan: { mode: RunMode; tier?: string; dataset?: string } | undefined;
  if (tiered && opts.uploadOnly) {
    if (opts.tier || opts.dataset) checkTierAndDataset(benchmark, opts.tier, opts.dataset);
  } else if (tiered) {
    const td = checkTierAndDataset(benchmark, opts.tier, opts.dataset);
    runPlan = {
      mode: RunMode.parse(opts.mode ?? (td.ranked ? 'official' : 'public')),
      tier: td.tier,
      dataset: td.dataset,
    };
  } else if (opts.tier || opts.dataset) {
    throw new CliError(
      EXIT.badInput,
      `${benchmark.id} has no tiers or datasets; submit without --tier/--dataset, then \`dryft run SUBMISSION_ID --mode public\`.`,
    );
  } else if (opts.mode || opts.wait) {
    throw new CliError(
      EXIT.badInput,
      'Uploading an engine does not start a run: submit first, then `dryft run SUBMISSION_ID --mode public|official [--wait SECONDS]`.',
    );
  }
  // A run would be refused by today's limit: say so before the bytes leave the machine.
  let quotaText = '';
  if (runPlan) {
    const bucket = runPlan.tier ?? runPlan.mode;
    const quota = await fetchQuota(api, benchmark.id, bucket);
    if (quota && quota.limit !== null && quota.remaining !== null && quota.remaining <= 0) {
      throw new CliError(
        EXIT.badInput,
        `Today's limit of ${quota.limit} ${bucket} run(s) on ${benchmark.id} is used up, so nothing was uploaded. It resets at ${shortTime(quota.resetsAt)} UTC; until then try a practice tier (\`dryft runs\` shows today's runs).`,
        'daily_limit_reached',
        quota,
      );
    }
    quotaText = quotaLeftText(quota);
  }
  if (runPlan?.mode === 'official' && !opts.yes && !ctx.interactive) {
    throw new CliError(
      EXIT.badInput,
      `The ${runPlan.tier} tier starts an official (ranked) run, which needs confirmation. There is no terminal to ask on: pass --yes to confirm.`,
      'confirmation_required',
    );
  }
  if (runPlan?.mode === 'official' && !opts.yes) {
    const ok = await ctx.confirm(
      `Upload ${target} and start an OFFICIAL ${runPlan.tier} run on ${benchmark.title}? It counts for the ranking and the daily limit.${quotaText}`,
    );
    if (!ok) throw new CliError(EXIT.badInput, 'Not submitted.', 'not_confirmed');
  }
  const uploaded = await upload(ctx, api, benchmark.id, check.uploadName, check.bytes);
  const sub = uploaded.submission;
  if (!runPlan) {
    if (ctx.json) ctx.out.data(uploaded);
    else {
      ctx.out.note(
        `Uploaded ${sub.name}: ${sub.fileCount} file(s), ${formatBytes(sub.sizeBytes)}, sha256 ${sub.sha256.slice(0, 12)}…`,
      );
      ctx.out.note(`Start a run: dryft run ${sub.id} --mode public`);
      // The id alone on stdout, so `ID=$(dryft submit engine)` works.
      ctx.out.line(sub.id);
    }
    return EXIT.ok;
  }
  if (!ctx.json) ctx.out.note(`Uploaded ${sub.name} (submission ${sub.id}).`);
  return startAndReport(ctx, api, { submission: sub, benchmark, ...runPlan, yes: true }, wait);
}

/** `dryft submissions` */
export async function submissionsCmd(
  ctx: Context,
  opts: { benchmark?: string; limit?: string; cursor?: string },
): Promise<number> {
  const { api } = await ctx.api();
  const benchmark = opts.benchmark === 'all' ? undefined : await ctx.benchmarkId(opts.benchmark);
  const page = await api.call(Paginated(SubmissionView), '/api/submissions', {
    query: { benchmark, limit: opts.limit ?? 20, cursor: opts.cursor },
  });
  if (ctx.json) {
    ctx.out.data(page);
    return EXIT.ok;
  }
  if (page.items.length === 0) {
    ctx.out.line('No submissions yet. Upload one with `dryft submit engine`.');
    return EXIT.ok;
  }
  ctx.out.table(
    ['SUBMISSION ID', 'NAME', 'BENCHMARK', 'FILES', 'SIZE', 'SOURCE', 'CREATED (UTC)'],
    page.items.map((s) => [
      s.id,
      s.name,
      s.benchmarkId,
      String(s.fileCount),
      formatBytes(s.sizeBytes),
      s.commitSha ? `${s.source} ${s.commitSha.slice(0, 7)}` : s.source,
      shortTime(s.createdAt),
    ]),
  );
  if (page.nextCursor) ctx.out.line(`More: dryft submissions --cursor ${page.nextCursor}`);
  return EXIT.ok;
}
