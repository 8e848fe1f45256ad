"""Paired measurement: order, statistics, the bootstrap interval and the adaptive stopping rule.

Pure functions (no processes, no clocks), so the unit tests can pin them down exactly.

- A *pair* is one timed baseline sample and one timed candidate sample of the same workload on the
  same prompts. Each workload's pairs alternate their order, baseline first in even pairs and
  candidate first in odd ones, so every two consecutive pairs form ABBA: a linear drift of the
  machine's speed, or a neighbour's load that rises and falls, hits both engines alike.
- A *round* is one pair of every workload (`round_order`). Workload j's pair p has the order of pair
  p + j, and the rounds visit the workloads forwards and backwards in turn, so every pair starts
  with the engine that ran last: one switch between the engines per pair instead of up to two. The
  idle engine stays frozen across the two samples in a row (freezer.py), and the GPU wait before a
  trusted sample is paid once per two of them.
- Per pair, ratio = baseline totalMs / candidate totalMs. Per workload, speed-up = the median of
  its pairs' ratios. Score = 100 × the geometric mean of the workloads' speed-ups.
- Interval: a percentile bootstrap over the pairs. Each resample draws, per workload, as many pairs
  as it has, with replacement, and recomputes the score; the interval is the 2.5th and 97.5th
  percentiles of `BOOTSTRAP_RESAMPLES` resampled scores. The generator is seeded from a fixed
  string plus the run's benchmark and workload names, so the same ratios always give the same
  interval.
- Run-to-run spread: two processes of the same engine keep a small speed difference for their
  whole life (memory placement, the cores they land on), so a whole run leans a little one way
  that its own pairs cannot show. The definition states that spread, measured by repeated official
  runs on its hardware (`runSpreadPct`, one standard deviation in percent), and the reported
  interval adds it to each side of the bootstrap's in quadrature, on a log scale (`widen`). The
  stopping rule uses the bootstrap's half-width alone: more pairs cannot shrink the rest.
- Stability: per workload, the interquartile range of the ratios over their median, in percent.
  Drift and load largely cancel in a ratio, so what is left is the engine's own unsteadiness.
"""
from __future__ import annotations

import math
import random
import statistics
from statistics import NormalDist
from typing import Optional, Sequence

BOOTSTRAP_RESAMPLES = 2000
LEVEL = 0.95


def order(pair_index: int, first: str = "baseline", second: str = "candidate") -> tuple[str, str]:
    """The order of the two samples of pair `pair_index` (0-based): AB, BA, AB, BA, … where A is
    `first` (the trusted engine: the reference, or the baseline) and B `second`."""
    return (first, second) if pair_index % 2 == 0 else (second, first)


def round_order(round_index: int, n_workloads: int, first: str = "baseline", second: str = "candidate") -> list:
    """Round `round_index` (0-based): [(workload index, (role, role)), …] in the order measured.
    Workload j's pair is in the order of pair round_index + j, so each workload alternates AB, BA, …
    from round to round (balanced after every two rounds, as `order`); even rounds visit the
    workloads forwards and odd ones backwards. Neighbours then have opposite orders, within a round
    and across the turn between two rounds (the same workload twice), so each pair starts with the
    engine that ended the pair before it: AB BA AB | BA AB BA | AB …"""
    js = range(n_workloads) if round_index % 2 == 0 else range(n_workloads - 1, -1, -1)
    return [(j, order(round_index + j, first, second)) for j in js]


def ratios(baseline_ms: Sequence[float], candidate_ms: Sequence[float]) -> list[float]:
    if len(baseline_ms) != len(candidate_ms):
        raise ValueError("a pair needs one baseline and one candidate sample")
    return [b / c for b, c in zip(baseline_ms, candidate_ms)]


def geomean(xs: Sequence[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def score(per_workload: Sequence[Sequence[float]]) -> float:
    """100 × geometric mean over workloads of the median ratio."""
    return 100.0 * geomean([statistics.median(r) for r in per_workload])


def _percentile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    pos = q * (len(sorted_xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def bootstrap_interval(per_workload: Sequence[Sequence[float]], seed: str,
                       resamples: int = BOOTSTRAP_RESAMPLES, level: float = LEVEL) -> tuple[float, float]:
    """(low, high) of the score, a percentile bootstrap over each workload's pairs."""
    rng = random.Random(f"dryft-bootstrap:{seed}")
    scores = []
    for _ in range(resamples):
        medians = []
        for r in per_workload:
            n = len(r)
            medians.append(statistics.median([r[rng.randrange(n)] for _ in range(n)]))
        scores.append(100.0 * geomean(medians))
    scores.sort()
    tail = (1.0 - level) / 2.0
    return _percentile(scores, tail), _percentile(scores, 1.0 - tail)


def widen(low: float, high: float, point: float, run_spread_pct: Optional[float], level: float = LEVEL) -> tuple[float, float]:
    """The bootstrap interval (low, high) around `point` with the run-to-run spread added: each side's
    distance from the point, on a log scale, combined in quadrature with z × run_spread_pct % (z for
    `level`, 1.96 at 95 %). No spread (None or 0) leaves the interval as it is."""
    if not run_spread_pct:
        return low, high
    extra = NormalDist().inv_cdf(0.5 + level / 2.0) * math.log1p(run_spread_pct / 100.0)
    below = max(0.0, math.log(point / low))
    above = max(0.0, math.log(high / point))
    return point * math.exp(-math.hypot(below, extra)), point * math.exp(math.hypot(above, extra))


def widen_log(low: float, high: float, point: float, extra_log: float) -> tuple[float, float]:
    """(low, high) around `point` with a further log-scale half-width `extra_log` combined in
    quadrature on each side: how K's own 95 % interval enters a score's absolute interval."""
    if not extra_log:
        return low, high
    below = max(0.0, math.log(point / low))
    above = max(0.0, math.log(high / point))
    return point * math.exp(-math.hypot(below, extra_log)), point * math.exp(math.hypot(above, extra_log))


def scaled_score(per_workload: Sequence[Sequence[float]], ks: Sequence[float]) -> float:
    """100 × geometric mean over workloads of K_w × the median ratio (reference ÷ candidate): the
    score in baseline points when the candidate was paired with the reference engine."""
    return 100.0 * geomean([k * statistics.median(r) for k, r in zip(ks, per_workload)])


def k_log_half_width(intervals: Sequence[tuple[float, float]]) -> float:
    """K's log-scale half-width for a score over these workloads, from each workload's 95 % interval
    (low, high) of K_w: the mean of the workloads' own half-widths, as if they were fully correlated
    (a machine that runs the baseline slow runs it slow on every workload), never less."""
    return sum(math.log(high / low) / 2.0 for low, high in intervals) / len(intervals)


def half_width_pct(low: float, high: float, point: float) -> float:
    """Half the interval's width, in percent of the score."""
    return (high - low) / 2.0 / point * 100.0


def spread_pct(rs: Sequence[float]) -> Optional[float]:
    """Interquartile range of the ratios over their median, in percent (None below 2 pairs)."""
    if len(rs) < 2:
        return None
    q1, _, q3 = statistics.quantiles(rs, n=4, method="inclusive")
    return (q3 - q1) / statistics.median(rs) * 100.0


def more_pairs(pairs: int, min_pairs: int, max_pairs: int, hw_pct: Optional[float], target_pct: Optional[float]) -> bool:
    """Whether to add another round of pairs: at the cap never; below the minimum, or in the middle
    of an ABBA block (an odd count), always; else while the interval's half-width is above the
    target (no target: stop at the minimum, made even).

    Stopping only after whole blocks keeps the order balanced, each engine first in half the pairs:
    a sample that runs faster or slower for being second (seen up to ±5 % on a loaded CPU) then
    moves as many ratios up as down, and the median is not pulled toward one order."""
    if pairs >= max_pairs:
        return False
    if pairs < min_pairs or pairs % 2 == 1:
        return True
    if target_pct is None or hw_pct is None:
        return False
    return hw_pct > target_pct
