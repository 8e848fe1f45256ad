// The box's GPUs as nvidia-smi lists them. Standard library only: the entry asks before anything is
// imported, so a machine without a GPU needs no node_modules to be told so.
import { spawnSync } from 'node:child_process';

export function gpus() {
  const r = spawnSync(
    'nvidia-smi',
    ['--query-gpu=index,name,driver_version,memory.total,memory.used', '--format=csv,noheader,nounits'],
    { encoding: 'utf8', timeout: 20_000 },
  );
  if (r.error || r.status !== 0)
    return { list: [], why: (r.error?.message ?? r.stderr ?? '').trim() || `exit ${r.status}` };
  const list = r.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const [index, name, driver, total, used] = l.split(',').map((x) => x.trim());
      return { index, name, driver, totalMiB: Number(total), usedMiB: Number(used) };
    });
  return { list, why: list.length ? '' : 'nvidia-smi lists no GPU' };
}

/** The compute processes nvidia-smi lists (pid, used memory), one per line; '' when none. */
export function computeApps() {
  return spawnSync('nvidia-smi', ['--query-compute-apps=pid,used_memory', '--format=csv,noheader'], {
    encoding: 'utf8',
  }).stdout.trim();
}
