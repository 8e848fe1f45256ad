import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { Context } from '../context';
import { CliError, EXIT } from '../errors';
import { checkLocal, type LocalCheck } from '../local';
import { formatBytes } from '../output';

export function printVerdicts(ctx: Context, check: LocalCheck): void {
  const what =
    check.kind === 'folder'
      ? `folder ${check.target} (packed as it would be uploaded)`
      : check.kind === 'archive'
        ? `archive ${check.target}`
        : `file ${check.target}`;
  ctx.out.line(`Checking ${what}:`);
  for (const v of check.verdicts) {
    const mark = v.passed ? ctx.out.paint('green', 'pass') : ctx.out.paint('red', 'FAIL');
    ctx.out.line(`  ${mark}  ${v.rule.padEnd(16)} ${v.title}`);
    for (const p of v.problems) ctx.out.line(`        ${ctx.out.paint('red', '-')} ${p}`);
  }
}

/** `dryft validate DIR|FILE`: the server's verdict, offline, rule by rule. */
export async function validate(ctx: Context, target: string): Promise<number> {
  const check = await checkLocal(target);
  if (ctx.json) {
    ctx.out.data({
      ok: check.ok,
      kind: check.kind,
      target,
      verdicts: check.verdicts,
      files: check.files,
      bytes: check.bytes?.length ?? null,
    });
  } else {
    printVerdicts(ctx, check);
    if (check.ok) {
      ctx.out.line(
        `${ctx.out.paint('green', 'Valid')}: ${check.files.length} file(s)${check.bytes ? `, ${formatBytes(check.bytes.length)}${check.kind === 'file' ? '' : ' compressed'}` : ''}.`,
      );
    } else {
      ctx.out.line(
        `${ctx.out.paint('red', 'Not valid')}: fix the FAIL lines above; the hub would refuse this upload.`,
      );
    }
  }
  return check.ok ? EXIT.ok : EXIT.badInput;
}

/** `dryft package DIR --output FILE`: deterministic .tar.gz with engine.py at its root. */
export async function packageCmd(
  ctx: Context,
  dir: string,
  opts: { output: string; force?: boolean },
): Promise<number> {
  const st = await fs.stat(dir).catch(() => null);
  if (!st?.isDirectory())
    throw new CliError(
      EXIT.badInput,
      `${dir} is not a folder. Package the folder that holds engine.py, e.g. \`dryft package engine --output submission.tar.gz\`.`,
    );
  const output = path.resolve(opts.output);
  const inside = path.relative(path.resolve(dir), output);
  if (!inside.startsWith('..') && !path.isAbsolute(inside)) {
    throw new CliError(
      EXIT.badInput,
      `Write the archive outside the folder being packaged (${opts.output} is inside ${dir}).`,
    );
  }
  const check = await checkLocal(dir, 'folder');
  if (!check.ok || !check.bytes) {
    if (ctx.json) ctx.out.data({ ok: false, verdicts: check.verdicts });
    else {
      printVerdicts(ctx, check);
      ctx.out.line(`${ctx.out.paint('red', 'Not packaged')}: fix the FAIL lines above first.`);
    }
    return EXIT.badInput;
  }
  await fs.mkdir(path.dirname(output), { recursive: true });
  await fs.writeFile(output, check.bytes);
  const sha256 = createHash('sha256').update(check.bytes).digest('hex');
  if (ctx.json) ctx.out.data({ ok: true, output, bytes: check.bytes.length, sha256, files: check.files });
  else {
    ctx.out.line(
      `Wrote ${opts.output}: ${check.files.length} file(s), ${formatBytes(check.bytes.length)}, sha256 ${sha256}`,
    );
    ctx.out.line('Upload it under Submissions → Submit an archive, or run `dryft submit` with it.');
  }
  return EXIT.ok;
}
