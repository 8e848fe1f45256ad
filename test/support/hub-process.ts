import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { BatchEntry, HarnessEvent, HarnessResultEvent } from '@dryft/libs';
import { HarnessEvent as HarnessEventSchema } from '@dryft/libs';
import { unpackValidated, validateArchive } from '@dryft/libs/node';
import { RunLifecycleService } from '../../apps/api/src/runs/run-lifecycle.service';
import { ArtifactStore } from '../../apps/api/src/submissions/artifact-store';
import { teamToken } from './cli';
import { startTestHub, TestHub, ROOT } from './hub';
import { AGENT_MAIN, startQuickstart } from './quickstart';
import { TestAgent } from './test-agent';

export const PYTHON = process.env.PYTHON ?? 'python3';

export interface LoopHub {
  url: string;
  token: string;
  teamId: string;
  /** How runs are executed: the real local agent process, or the harness stand-in below. */
  runner: 'local-agent' | 'harness-standin';
  /** Everything the hub and its runner printed, for failure messages. */
  output(): string;
  close(): Promise<void>;
}

/**
 * A hub that executes toy-decode runs for real, for tests that drive it from outside (the starter's
 * research loop, the CLI): when the local agent is built (apps/gpu-agent/dist/main.js), the API
 * process and that agent (test/support/quickstart.ts); until then, the Nest app in this process
 * on a fresh real database with {@link HarnessStandin} running each queued run through the real
 * harness (`python3 -m harness run`) on this machine's CPU.
 */
export async function startLoopHub(login = `loop${Date.now().toString(36)}`): Promise<LoopHub> {
  if (existsSync(AGENT_MAIN) && process.env.DRYFT_TEST_STANDIN !== '1') {
    const qs = await startQuickstart();
    try {
      const { token, teamId } = await teamToken(qs.url, login);
      return {
        url: qs.url,
        token,
        teamId,
        runner: 'local-agent',
        output: () => `${qs.api.output()}\n${qs.agent?.output() ?? ''}`,
        close: () => qs.close(),
      };
    } catch (err) {
      await qs.close();
      throw err;
    }
  }
  const hub = await startTestHub();
  const standin = new HarnessStandin(hub);
  try {
    const { token, teamId } = await teamToken(hub.baseUrl, login);
    standin.start();
    return {
      url: hub.baseUrl,
      token,
      teamId,
      runner: 'harness-standin',
      output: () => standin.output,
      async close() {
        await standin.stop();
        await hub.close();
      },
    };
  } catch (err) {
    await standin.stop();
    await hub.close();
    throw err;
  }
}

/**
 * The model path of the definition, resolved in this checkout. The toy model ships as
 * models/toy/model.json (harness/README.md); when the definition names a file that is not there,
 * its folder is what the harness's toy reference and the engines accept instead.
 */
function modelPath(p: string): string {
  const full = path.resolve(ROOT, p);
  if (existsSync(full)) return full;
  const dir = path.dirname(full);
  if (existsSync(path.join(dir, 'model.json'))) return dir;
  return full;
}

/**
 * Stands in for the GPU agent until apps/gpu-agent lands: takes queued runs the way dispatch does
 * (TestAgent.claim), unpacks the stored submission with the shared rules into a fresh folder, runs
 * the real harness on it with the spec the hub derived, and reports every log line, event and the
 * result through the same RunLifecycleService the /agents gateway uses. No sandbox: tests only.
 */
export class HarnessStandin {
  private readonly agent: TestAgent;
  private timer?: NodeJS.Timeout;
  private busy?: Promise<void>;
  output = '';

  constructor(private readonly hub: TestHub) {
    this.agent = new TestAgent(hub, 'harness-standin');
  }

  start(): void {
    this.timer = setInterval(() => {
      if (!this.busy) this.busy = this.tick().finally(() => (this.busy = undefined));
    }, 200);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.busy;
  }

  private async tick(): Promise<void> {
    const rows: { id: string; spec: Record<string, unknown>; sha256: string }[] =
      await this.hub.dataSource.query(
        `SELECT r.id, r.spec, s.sha256 FROM runs r JOIN submissions s ON s.id = r.submission_id WHERE r.status = 'queued' ORDER BY r.created_at LIMIT 1`,
      );
    const row = rows[0];
    if (!row) return;
    await this.agent.claim(row.id);
    const lifecycle = this.hub.app.get(RunLifecycleService);
    await lifecycle.markStarted(row.id, this.agent.id);
    try {
      await this.execute(row.id, row.spec, await this.hub.app.get(ArtifactStore).read(row.sha256));
    } catch (err) {
      this.output += `standin: ${(err as Error).stack}\n`;
      await this.agent.finish(row.id, {
        status: 'failed',
        failureCode: 'infra_error',
        message: `stand-in agent: ${(err as Error).message}`,
      });
    }
  }

  private async execute(runId: string, spec: Record<string, unknown>, archive: Buffer): Promise<void> {
    const work = mkdtempSync(path.join(tmpdir(), 'dryft-standin-'));
    try {
      const submission = path.join(work, 'submission');
      mkdirSync(submission);
      if (spec.kind === 'decode') {
        const validation = await validateArchive(archive);
        if (!validation.ok)
          throw new Error(
            `stored archive does not validate: ${validation.problems.map((p) => p.message).join(' ')}`,
          );
        await unpackValidated(validation.files, submission);
        const model = spec.model as { family: string; path: string };
        spec = {
          ...spec,
          model: { ...model, path: modelPath(model.path) },
          baselineEngine: path.resolve(ROOT, String(spec.baselineEngine)),
        };
      } else {
        writeFileSync(path.join(submission, 'submission.py'), archive);
      }
      const specFile = path.join(work, 'spec.json');
      writeFileSync(specFile, JSON.stringify(spec));
      const child = spawn(
        PYTHON,
        [
          '-m',
          'harness',
          'run',
          '--benchmark',
          String(spec.benchmark),
          '--submission',
          submission,
          '--mode',
          String(spec.mode),
          '--spec',
          specFile,
          '--events-fd',
          '3',
        ],
        {
          cwd: path.join(ROOT, 'harness'),
          stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
        },
      );
      let result: HarnessResultEvent | undefined;
      const pending: BatchEntry[] = [];
      const line = (text: string, stream: 'out' | 'harness') => {
        this.output += `${text}\n`;
        pending.push({ type: 'log', n: 0, ts: Date.now(), stream, text: text.slice(0, 16_000) });
      };
      const lines = (stream: NodeJS.ReadableStream, each: (l: string) => void) => {
        let buf = '';
        stream.on('data', (c: Buffer) => {
          buf += c.toString('utf8');
          let i;
          while ((i = buf.indexOf('\n')) >= 0) {
            each(buf.slice(0, i));
            buf = buf.slice(i + 1);
          }
        });
        return new Promise<void>((resolve) =>
          stream.on('end', () => {
            if (buf) each(buf);
            resolve();
          }),
        );
      };
      const done = Promise.all([
        lines(child.stdout!, (l) => line(l, 'out')),
        lines(child.stderr!, (l) => line(l, 'out')),
        lines(child.stdio[3] as NodeJS.ReadableStream, (l) => {
          const event = HarnessEventSchema.parse(JSON.parse(l)) as HarnessEvent;
          if (event.type === 'result') result = event;
          else if (event.type === 'log') line(event.message, 'harness');
          else pending.push({ type: 'event', ts: Date.now(), event });
        }),
        new Promise((resolve) => child.once('close', resolve)),
      ]);
      const flush = async () => {
        if (!pending.length) return;
        const batch = pending.splice(0);
        // number log lines in order, as an agent does
        const entries = batch.map((e) => (e.type === 'log' ? { ...e, n: this.nextLine(runId) } : e));
        await this.agent.send(runId, entries);
      };
      const pump = setInterval(() => void flush(), 100);
      await done;
      clearInterval(pump);
      await flush();
      if (!result) throw new Error('the harness ended without a result event');
      await this.agent.finish(runId, result);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }

  private lines = new Map<string, number>();
  private nextLine(runId: string): number {
    const n = (this.lines.get(runId) ?? 0) + 1;
    this.lines.set(runId, n);
    return n;
  }
}
