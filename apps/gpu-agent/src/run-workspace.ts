import type { HarnessSpec, RunAssign } from '@dryft/libs';
import { validateArchive } from '@dryft/libs/node';
import { createHash } from 'node:crypto';
import { promises as fs, realpathSync } from 'node:fs';
import * as path from 'node:path';
import type { AgentConfig } from './config';
import { formatRuntime } from './config';

/** A run's folders, ready for the harness (real paths: the sandbox mounts them). */
export interface PreparedRun {
  /** The submission, unpacked: the only folder the engine sees. */
  workspace: string;
  /** Beside it, never inside: the spec (hidden workloads) and the events wrapper. */
  privateDir: string;
  specPath: string;
  spec: HarnessSpec;
}

/**
 * The run's checkout, the CI-runner way: a fresh `runDir` (whatever an earlier attempt left is
 * wiped first), the submission fetched once with the one-time URL and checked against its sha256,
 * unpacked under the shared archive rules (nothing may land outside the workspace), and the spec
 * written beside it with this box's paths. Throws with the reason; the caller turns it into a verdict.
 */
export async function prepareRun(o: {
  assign: RunAssign;
  config: AgentConfig;
  runDir: string;
  /** The versions the agent reported, repeated in the run's log. */
  runtime?: Record<string, string>;
  note: (text: string) => void;
  /** Told the size of the submission once it is downloaded (the agent's metrics). */
  downloaded?: (bytes: number) => void;
}): Promise<PreparedRun> {
  const { assign, config, runDir, note } = o;
  await fs.rm(runDir, { recursive: true, force: true });
  const workspace = path.join(runDir, 'workspace');
  const privateDir = path.join(runDir, 'private');
  await fs.mkdir(workspace, { recursive: true, mode: 0o700 });
  await fs.mkdir(privateDir, { recursive: true, mode: 0o700 });
  note(`preparing run ${assign.runId} (${assign.benchmarkId}, ${assign.mode}) on slot ${assign.slot}`);

  // A baseline re-measure has no submission: the harness times only its trusted baseline engine
  // and gets the empty workspace.
  if (assign.submission) await fetchSubmission(assign.submission, config, workspace, note, o.downloaded);
  else
    note(`${assign.mode === 'calibration' ? 'calibration' : 'baseline re-measure'}: no submission to fetch`);
  if (o.runtime) note(`runtime: ${formatRuntime(o.runtime)}`);

  const spec = localSpec(assign.spec, config);
  await fs.writeFile(path.join(privateDir, 'spec.json'), JSON.stringify(spec), { mode: 0o600 });
  return {
    workspace: realpathSync(workspace),
    privateDir: realpathSync(privateDir),
    specPath: path.join(realpathSync(privateDir), 'spec.json'),
    spec,
  };
}

/** Fetches the submission with the one-time URL, checks its sha256 and unpacks it into the workspace. */
async function fetchSubmission(
  submission: NonNullable<RunAssign['submission']>,
  config: AgentConfig,
  workspace: string,
  note: (text: string) => void,
  downloaded?: (bytes: number) => void,
): Promise<void> {
  const url = new URL(submission.url, config.apiUrl);
  const res = await fetch(url, { headers: { 'X-Agent-Token': config.token } });
  if (!res.ok) throw new Error(`download failed: HTTP ${res.status} ${(await res.text()).slice(0, 200)}`);
  const bytes = Buffer.from(await res.arrayBuffer());
  downloaded?.(bytes.length);
  const sha = createHash('sha256').update(bytes).digest('hex');
  if (sha !== submission.sha256)
    throw new Error(`the download's sha256 ${sha} is not the submission's ${submission.sha256}`);

  if (submission.kind === 'archive') {
    const verdict = await validateArchive(bytes);
    if (!verdict.ok || !verdict.files) {
      const problems = verdict.verdicts
        .flatMap((v) => v.problems)
        .slice(0, 5)
        .join('; ');
      throw new Error(`the archive fails the archive rules: ${problems}`);
    }
    for (const file of verdict.files) {
      const target = path.resolve(workspace, file.path);
      if (!target.startsWith(workspace + path.sep))
        throw new Error(`archive path escapes the workspace: ${file.path}`);
      await fs.mkdir(path.dirname(target), { recursive: true });
      await fs.writeFile(target, file.content, { flag: 'wx' });
    }
    note(`unpacked ${verdict.files.length} files`);
  } else {
    await fs.writeFile(path.join(workspace, 'submission.py'), bytes, { flag: 'wx' });
  }
}

/** The spec with this box's paths: the agent's model map, the checkout's baseline and reference engines. */
function localSpec(spec: HarnessSpec, config: AgentConfig): HarnessSpec {
  if (spec.kind !== 'decode') return spec;
  const modelPath = config.models[spec.benchmark] ?? path.resolve(config.repoDir, spec.model.path);
  return {
    ...spec,
    model: { ...spec.model, path: modelPath },
    baselineEngine: path.resolve(config.repoDir, spec.baselineEngine),
    ...(spec.referenceEngine ? { referenceEngine: path.resolve(config.repoDir, spec.referenceEngine) } : {}),
  };
}
