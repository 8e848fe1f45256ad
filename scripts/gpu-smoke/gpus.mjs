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

/** Whether every GPU uses at most what it did BEFORE (+512 MiB of the driver's own noise). */
export function memoryBack(before, now) {
  return now.every((g, k) => g.usedMiB <= (before[k]?.usedMiB ?? 0) + 512);
}

/**
 * Polls nvidia-smi every 500 ms, at most TRIES times, until the GPUs' memory is back to BEFORE's
 * and no compute process is left; what it saw last: { now, apps, freed }.
 */
export async function waitMemoryBack(before, tries = 60) {
  let seen;
  for (let i = 0; i < tries; i++) {
    seen = { now: gpus().list, apps: computeApps() };
    seen.freed = memoryBack(before, seen.now) && !seen.apps;
    if (seen.freed) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  return seen;
}

/** "0/0 MiB": each GPU's used memory. */
export const usedMiB = (list) => `${list.map((g) => g.usedMiB).join('/')} MiB`;
