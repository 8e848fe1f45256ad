// What gpu-smoke says as it goes (`say`, to stdout and --out DIR/gpu-smoke.log), the checks it
// records, the runs' rows, and the table it prints at the end.
import { appendFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export function verdictWord(ok) {
  return ok === 'info' ? 'INFO' : ok ? 'PASS' : 'FAIL';
}

export class Report {
  /** @param {{ outDir: string | null, started: number }} o */
  constructor(o) {
    this.outDir = o.outDir;
    this.started = o.started;
    this.results = [];
    this.rows = [];
    this.failed = false;
  }

  elapsed() {
    return `${((Date.now() - this.started) / 1000).toFixed(1)}s`;
  }

  say(line) {
    const text = `[gpu-smoke ${this.elapsed()}] ${line}`;
    console.log(text);
    if (this.outDir) appendFileSync(path.join(this.outDir, 'gpu-smoke.log'), `${text}\n`);
  }

  /** ok: true (PASS), false (FAIL), or 'info' (INFO: a figure that decides nothing, e.g. an inconclusive comparison). */
  record(check, ok, detail) {
    this.results.push({ check, ok, detail });
    if (!ok) this.failed = true;
    this.say(`${verdictWord(ok)} ${check}: ${detail}`);
  }

  row(r) {
    this.rows.push(r);
  }

  /** Appends a run's stored log to --out DIR/runs.log. */
  runLog(text) {
    if (this.outDir) appendFileSync(path.join(this.outDir, 'runs.log'), text);
  }

  printTable(title) {
    const line = (cells) => `| ${cells.join(' | ')} |`;
    const out = [
      '',
      title,
      line(['run', 'mode', 'expected', 'verdict', 'score', 'seconds', 'live to watcher', 'figures']),
      line(['---', '---', '---', '---', '---', '---', '---', '---']),
      ...this.rows.map((r) =>
        line([
          r.label,
          r.mode,
          r.expected,
          r.got,
          r.score == null ? '-' : r.score.toFixed(2),
          r.secs.toFixed(1),
          r.live,
          r.detail,
        ]),
      ),
      '',
      line(['check', 'result', 'detail']),
      line(['---', '---', '---']),
      ...this.results.map((r) =>
        line([r.check, verdictWord(r.ok), r.detail.replace(/\n/g, ' ').slice(0, 600)]),
      ),
      '',
      this.failed ? 'gpu-smoke: FAILED (see the FAIL rows)' : 'gpu-smoke: all checks passed',
    ].join('\n');
    console.log(out);
    if (this.outDir) writeFileSync(path.join(this.outDir, 'gpu-smoke-table.md'), `${out}\n`);
  }
}
