import { readdirSync, readFileSync } from 'node:fs';

/** Parent of every process, read from /proc (Linux). */
function parents(): Map<number, number> {
  const map = new Map<number, number>();
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return map;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      // The command name may contain spaces and parentheses: fields start after the last ')'.
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      map.set(Number(e), Number(rest[1]));
    } catch {
      /* the process exited meanwhile */
    }
  }
  return map;
}

/** Every live descendant of `pid` (children that started their own session included). */
export function descendants(pid: number): number[] {
  const map = parents();
  const children = new Map<number, number[]>();
  for (const [child, parent] of map) {
    const list = children.get(parent) ?? [];
    list.push(child);
    children.set(parent, list);
  }
  const out: number[] = [];
  const stack = [pid];
  while (stack.length) {
    const p = stack.pop()!;
    for (const c of children.get(p) ?? []) {
      out.push(c);
      stack.push(c);
    }
  }
  return out;
}

export function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    /* already gone */
  }
}

/**
 * Signals the process group of `pid` and every descendant (a child that called setsid() has left
 * the group but not the tree), children first so nothing is reparented before it is reached.
 */
export function signalTree(pid: number, sig: NodeJS.Signals): void {
  const tree = descendants(pid);
  try {
    process.kill(-pid, sig);
  } catch {
    /* no such group */
  }
  for (const p of tree.reverse()) signal(p, sig);
  signal(pid, sig);
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
