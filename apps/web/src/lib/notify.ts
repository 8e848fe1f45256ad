import type { RunView } from '@dryft/libs';

/** Opt-in browser notifications when a run of the team ends, from the open tab (Notification API). */
const KEY = 'dryft:notify-run-end';

export function notificationsSupported(): boolean {
  return typeof window !== 'undefined' && 'Notification' in window;
}

export function notificationsWanted(): boolean {
  return (
    notificationsSupported() && localStorage.getItem(KEY) === '1' && Notification.permission === 'granted'
  );
}

/** Asks the browser for permission (only from a click); answers whether notifications are on. */
export async function enableNotifications(): Promise<boolean> {
  if (!notificationsSupported()) return false;
  const permission =
    Notification.permission === 'granted' ? 'granted' : await Notification.requestPermission();
  if (permission !== 'granted') return false;
  localStorage.setItem(KEY, '1');
  return true;
}

export function disableNotifications(): void {
  if (typeof localStorage !== 'undefined') localStorage.removeItem(KEY);
}

/** The notification's title and body for a run that reached a final state. */
export function runEndMessage(run: RunView, unit = 'points'): { title: string; body: string } {
  const id = run.id.slice(0, 8);
  const what = `${run.submissionName} · ${run.mode} · ${run.benchmarkId}`;
  if (run.status === 'succeeded')
    return {
      title: `Run ${id} succeeded`,
      body: `${what}${run.score !== null ? ` · ${run.score.toFixed(1)} ${unit}` : ''}`,
    };
  if (run.status === 'failed')
    return {
      title: `Run ${id} failed (${run.failureCode ?? 'error'})`,
      body: `${what}${run.message ? ` · ${run.message}` : ''}`,
    };
  return {
    title: `Run ${id} was canceled`,
    body: `${what}${run.cancelReason ? ` · ${run.cancelReason}` : ''}`,
  };
}
