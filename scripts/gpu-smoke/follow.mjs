// Following a run as the web and `dryft logs --follow` do: the product's LogFollower (apps/cli, over
// libs' exactly-once RunFollower) on the /live socket, with the REST log filling gaps and the end.
import { isTerminal, LogFollower } from '../../apps/cli/dist/live.js';

/**
 * Follows RUNID until it is finished and every stored line has arrived. `seen` counts what reached
 * the /live watcher while the run went on (log lines that came over the socket, sample events,
 * a training run's loss points); `done` resolves with the finished run and its whole log, as
 * `[stream] text` lines.
 */
export function watch(participant, runId, { onSample, onMetric } = {}) {
  const seen = {
    logs: 0,
    samples: 0,
    firstSampleAt: null,
    losses: 0,
    firstLossAt: null,
    // When the watcher first heard that the run had finished (a terminal run.status, else its end).
    endSeenAt: null,
    finishedAt: null,
    status: null,
  };
  const logs = [];
  const follower = new LogFollower({
    api: participant.api,
    token: participant.token,
    runId,
    pollMs: 500,
    onLine: (l) => logs.push(`[${l.stream}] ${l.text}`),
    onStatus: (r) => {
      if (isTerminal(r)) seen.endSeenAt ??= Date.now();
    },
    onSample: (s) => {
      seen.samples += 1;
      seen.firstSampleAt ??= Date.now();
      onSample?.(s);
    },
    // Metric events come over the socket only: each one counted here reached the watcher live.
    onMetric: (m) => {
      if (m.name === 'loss' && seen.endSeenAt === null) {
        seen.losses += 1;
        seen.firstLossAt ??= Date.now();
      }
      onMetric?.(m);
    },
  });
  const done = follower.run().then((run) => {
    // Only the lines that reached the watcher over /live count (not those read over REST).
    seen.logs = follower.stats.socketLines;
    seen.finishedAt = Date.now();
    seen.endSeenAt ??= seen.finishedAt;
    seen.status = run.status;
    return { run, logs };
  });
  return { seen, done };
}
