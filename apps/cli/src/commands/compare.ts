import { checkCompareIds, CompareError, compareRuns, RunResultView, type CompareRow } from '@dryft/libs';
import type { Context } from '../context';
import { CliError, EXIT } from '../errors';
import { formatNumber, formatScoreInterval } from '../output';
import { notFoundHint } from './runs';

const cell = (row: CompareRow, i: number): string => {
  const v = row.values[i];
  if (v === null) return '-';
  const d = row.deltaPct[i];
  const text = formatNumber(v) + (i > 0 && d !== null ? ` (${d >= 0 ? '+' : ''}${d.toFixed(1)}%)` : '');
  return row.best === i ? `${text} *` : text;
};

/** `dryft compare RUN RUN [RUN…]`: runs of one benchmark side by side (the first is the one deltas are against). */
export async function compareCmd(ctx: Context, ids: string[]): Promise<number> {
  try {
    checkCompareIds(ids);
  } catch (err) {
    if (err instanceof CompareError) throw new CliError(EXIT.badInput, err.message, err.code);
    throw err;
  }
  const { api } = await ctx.api();
  const results = await Promise.all(
    ids.map((id) =>
      api
        .call(RunResultView, `/api/runs/${encodeURIComponent(id)}/result`)
        .catch((e) => notFoundHint(e, 'run', id)),
    ),
  );
  let comparison;
  try {
    comparison = compareRuns(results);
  } catch (err) {
    if (err instanceof CompareError) throw new CliError(EXIT.badInput, err.message, err.code);
    throw err;
  }
  if (ctx.json) {
    ctx.out.data(comparison);
    return EXIT.ok;
  }
  ctx.out.line(
    `Comparing ${comparison.runs.length} runs of ${comparison.benchmarkId} (deltas against the first; * the best):`,
  );
  comparison.runs.forEach((r, i) => {
    const score =
      r.score === null
        ? 'no score'
        : `score ${formatNumber(r.score)}${formatScoreInterval(r.interval, null)}`;
    ctx.out.line(`  ${i + 1}. ${r.label}: ${r.mode}, ${r.status}, ${score}`);
  });
  ctx.out.line('');
  ctx.out.table(
    ['', ...comparison.runs.map((_, i) => `RUN ${i + 1}`)],
    comparison.rows.map((row) => [row.label, ...comparison.runs.map((_, i) => cell(row, i))]),
  );
  if (comparison.kind === 'training') {
    const finals = comparison.curves.map((c, i) => {
      const last = c.points.at(-1);
      return `RUN ${i + 1}: ${c.points.length} loss point(s)${last ? `, last ${formatNumber(last.value)} at step ${last.step}` : ''}`;
    });
    ctx.out.line('');
    ctx.out.line(`Loss curves: ${finals.join('; ')} (the web's compare page overlays them).`);
  }
  const unfinished = comparison.runs.filter((r) => r.status !== 'succeeded');
  if (unfinished.length)
    ctx.out.line(
      `Note: ${unfinished.map((r) => `${r.label} is ${r.status}`).join('; ')}: its figures may be partial or missing.`,
    );
  return EXIT.ok;
}
