import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import { BenchmarkDefinition } from './definition';

export class BenchmarkConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Benchmark definitions are invalid:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/**
 * Loads every `*.yaml` definition in a folder. Each problem names the file and the field, so an
 * organizer fixes a typo without guessing; one bad file stops the hub at boot.
 */
export function loadBenchmarkDefinitions(dir: string): BenchmarkDefinition[] {
  const problems: string[] = [];
  const out: BenchmarkDefinition[] = [];
  let files: string[];
  try {
    files = readdirSync(dir)
      .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
      .sort();
  } catch (err) {
    throw new BenchmarkConfigError([`${dir}: cannot read the benchmarks folder (${(err as Error).message})`]);
  }
  if (files.length === 0) throw new BenchmarkConfigError([`${dir}: no *.yaml benchmark definitions`]);
  const ids = new Map<string, string>();
  for (const file of files) {
    const full = path.join(dir, file);
    let raw: unknown;
    try {
      raw = parse(readFileSync(full, 'utf8'));
    } catch (err) {
      problems.push(`${file}: not valid YAML (${(err as Error).message.split('\n')[0]})`);
      continue;
    }
    const parsed = BenchmarkDefinition.safeParse(raw);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        problems.push(`${file}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
      }
      continue;
    }
    const other = ids.get(parsed.data.id);
    if (other) problems.push(`${file}: id "${parsed.data.id}" is already used by ${other}`);
    ids.set(parsed.data.id, file);
    out.push(parsed.data);
  }
  if (problems.length > 0) throw new BenchmarkConfigError(problems);
  return out;
}
