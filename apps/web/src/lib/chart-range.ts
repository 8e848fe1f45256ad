/**
 * The x ranges of the charts. A sample-index axis with one sample is that sample, not 0–3; a time
 * axis (a team's best over time, which ends at now) gets a margin before its first point and never
 * runs past its last one by more than a minute (never hours into the future).
 */
export function indexRange(min: number, max: number): [number, number] {
  if (max - min < 1) return [min - 0.5, max + 0.5];
  return [Math.max(0, Math.floor(min) - 0.5), Math.ceil(max) + 0.5];
}

export function timeRange(min: number, max: number): [number, number] {
  const span = max - min;
  const pad = Math.max(300, span * 0.05);
  return [min - pad, max + Math.min(60, pad)];
}
