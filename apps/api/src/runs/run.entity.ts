import { Check, Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import type {
  FailureCode,
  HarnessSpec,
  LogLine,
  RunKindMode,
  RunStatus,
  ScoreInterval,
  ScoringBasis,
  WorkloadSummary,
} from '@dryft/libs';

/** The pending end of a capped log: the last lines past the head, and what fell out before them. */
export interface LogTail {
  lines: LogLine[];
  bytes: number;
  droppedLines: number;
  droppedBytes: number;
}

/**
 * One evaluation of a submission, or (mode `baseline`) an organizer's re-measure of the trusted
 * baseline engine on one hardware key, or (mode `calibration`) one part of an organizer's
 * calibration of K on one hardware key; those two have no submission and no team. States: queued →
 * assigned → running → succeeded | failed | canceled. The agent's batches are numbered;
 * `lastBatchSeq` is what the server has stored (dedup key).
 */
@Entity('runs')
@Check(
  'CHK_runs_owner',
  "mode IN ('baseline', 'calibration') OR (submission_id IS NOT NULL AND team_id IS NOT NULL)",
)
@Index('IDX_runs_one_remeasure', ['benchmarkId', 'hardware'], {
  unique: true,
  where: "mode = 'baseline' AND status IN ('queued', 'assigned', 'running')",
})
@Index('IDX_runs_one_calibration_part', ['benchmarkId', 'hardware', 'calibrationPart'], {
  unique: true,
  where: "mode = 'calibration' AND status IN ('queued', 'assigned', 'running')",
})
@Index('IDX_runs_status_created', ['status', 'createdAt'])
@Index('IDX_runs_team_created', ['teamId', 'createdAt'])
@Index('IDX_runs_benchmark_board', ['benchmarkId', 'mode', 'status'])
@Index('IDX_runs_rerun_batch', ['rerunBatchId'])
export class RunEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  /** Null only for a baseline re-measure (mode `baseline`). */
  @Column({ name: 'submission_id', type: 'uuid', nullable: true })
  submissionId!: string | null;

  @Column({ name: 'benchmark_id', type: 'text' })
  benchmarkId!: string;

  /** Null only for a baseline re-measure (mode `baseline`). */
  @Column({ name: 'team_id', type: 'uuid', nullable: true })
  teamId!: string | null;

  @Column({ name: 'created_by', type: 'uuid' })
  createdBy!: string;

  @Column({ type: 'text' })
  mode!: RunKindMode;

  /**
   * Baseline re-measures: the hardware key (GPU model name, or "cpu") the run must be measured on;
   * only an agent whose key it is takes it, and only its figures under that key are cached.
   */
  @Column({ type: 'text', nullable: true })
  hardware!: string | null;

  /**
   * Calibration runs: part n (1-based) of the organizer's request. One unfinished run per part,
   * benchmark and key (a partial unique index), so a second request while parts wait is refused.
   */
  @Column({ name: 'calibration_part', type: 'integer', nullable: true })
  calibrationPart!: number | null;

  @Column({ type: 'text', nullable: true })
  tier!: string | null;

  @Column({ type: 'text', nullable: true })
  dataset!: string | null;

  @Column({ type: 'text' })
  status!: RunStatus;

  @Column({ name: 'failure_code', type: 'text', nullable: true })
  failureCode!: FailureCode | null;

  @Column({ type: 'text', nullable: true })
  message!: string | null;

  /** Traceback or first bad position, shown to the team. */
  @Column({ type: 'text', nullable: true })
  detail!: string | null;

  @Column({ name: 'cancel_reason', type: 'text', nullable: true })
  cancelReason!: string | null;

  @Column({ type: 'double precision', nullable: true })
  score!: number | null;

  /** Official decode runs: the score's 95 % interval (bootstrap over the pairs). */
  @Column({ name: 'score_interval', type: 'jsonb', nullable: true })
  scoreInterval!: ScoreInterval | null;

  /** Official decode runs: baseline/candidate pairs measured per workload. */
  @Column({ type: 'integer', nullable: true })
  pairs!: number | null;

  /** Official decode runs measured through a calibrated K: the interval with K's folded in. */
  @Column({ name: 'absolute_interval', type: 'jsonb', nullable: true })
  absoluteInterval!: ScoreInterval | null;

  /** Decode runs: what the score was measured against (the harness's words in `note`). */
  @Column({ type: 'jsonb', nullable: true })
  scoring!: ScoringBasis | null;

  /**
   * Official decode runs: the secret nonce the harness mixed into the hidden prompts. Organizers
   * only (AdminRunView); never in a participant's run view, result or log.
   */
  @Column({ name: 'prompt_nonce', type: 'text', nullable: true })
  promptNonce!: string | null;

  /** The runtime versions of the agent the run was assigned to, as it reported them (GPU agents). */
  @Column({ type: 'jsonb', nullable: true })
  runtime!: Record<string, string> | null;

  /**
   * How that runtime differs from the benchmark's pins at assignment (libs runtimeMismatches), in
   * words; empty: every pin held; null: nothing was checked (no pins, or not assigned yet).
   */
  @Column({ name: 'runtime_mismatch', type: 'jsonb', nullable: true })
  runtimeMismatch!: string[] | null;

  @Column({ name: 'rules_version', type: 'integer' })
  rulesVersion!: number;

  @Column({ type: 'boolean', default: false })
  invalidated!: boolean;

  @Column({ name: 'invalidated_reason', type: 'text', nullable: true })
  invalidatedReason!: string | null;

  /** Set by an organizer (reversible): the result no longer counts and the reason is shown. */
  @Column({ name: 'disqualified_at', type: 'timestamptz', nullable: true })
  disqualifiedAt!: Date | null;

  @Column({ name: 'disqualified_reason', type: 'text', nullable: true })
  disqualifiedReason!: string | null;

  @Column({ name: 'disqualified_by', type: 'uuid', nullable: true })
  disqualifiedBy!: string | null;

  @Column({ name: 'agent_id', type: 'uuid', nullable: true })
  agentId!: string | null;

  @Column({ name: 'agent_name', type: 'text', nullable: true })
  agentName!: string | null;

  @Column({ type: 'integer', nullable: true })
  slot!: number | null;

  @Column({ name: 'lease_expires_at', type: 'timestamptz', nullable: true })
  leaseExpiresAt!: Date | null;

  /**
   * Set when the sweeper failed the run because its lease lapsed (not when the agent said it lost the
   * run, nor on revoke): the agent that still holds it may report on, and its verdict is accepted.
   */
  @Column({ name: 'lease_lost_at', type: 'timestamptz', nullable: true })
  leaseLostAt!: Date | null;

  /** Log lines and UTF-8 bytes stored for this run (the cap's accounting; docs/API.md "Log cap"). */
  @Column({ name: 'log_lines', type: 'integer', default: 0 })
  logLines!: number;

  @Column({ name: 'log_bytes', type: 'bigint', default: 0 })
  logBytes!: string;

  /**
   * Lines past the head of a capped log, not stored yet: a rolling window of the last ones (and
   * how many fell out of it), stored after a notice line when the run ends.
   */
  @Column({ name: 'log_tail', type: 'jsonb', nullable: true })
  logTail!: LogTail | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'assigned_at', type: 'timestamptz', nullable: true })
  assignedAt!: Date | null;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt!: Date | null;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt!: Date | null;

  /** Whole-run limit in force; the deadline is counted from assignment. */
  @Column({ name: 'run_time_limit_seconds', type: 'integer' })
  runTimeLimitSeconds!: number;

  @Column({ name: 'deadline_at', type: 'timestamptz', nullable: true })
  deadlineAt!: Date | null;

  @Column({ name: 'last_batch_seq', type: 'integer', default: 0 })
  lastBatchSeq!: number;

  @Column({ name: 'last_log_seq', type: 'integer', default: 0 })
  lastLogSeq!: number;

  /**
   * Bumped by the database on every UPDATE of the row (trigger TRG_runs_revision), never written
   * here: views carry it so a client keeps the newest snapshot whatever order they arrive in.
   */
  @Column({
    type: 'bigint',
    default: 0,
    insert: false,
    update: false,
    transformer: { to: (v: number) => v, from: (v: string | number) => Number(v) },
  })
  revision!: number;

  @Column({ type: 'jsonb', nullable: true })
  workloads!: WorkloadSummary[] | null;

  @Column({ type: 'jsonb', nullable: true })
  metrics!: Record<string, number> | null;

  /** The harness spec derived from the definition when the run was created. */
  @Column({ type: 'jsonb' })
  spec!: HarnessSpec;

  /** Daily-limit accounting: the bucket (public/official/tier) and the UTC day it counts on. */
  @Column({ name: 'quota_bucket', type: 'text' })
  quotaBucket!: string;

  @Column({ name: 'quota_day', type: 'date' })
  quotaDay!: string;

  /** The holder the run counts for on daily limits and boards: the team, or the user for per-user benchmarks. */
  @Column({ name: 'quota_holder', type: 'text' })
  quotaHolder!: string;

  @Column({ name: 'quota_refunded', type: 'boolean', default: false })
  quotaRefunded!: boolean;

  /**
   * An organizer's re-run: the run it repeats (same submission and mode). Re-runs count in their
   * own quota bucket (`rerun`), which no daily limit reads, go after team runs in dispatch and
   * never rank on the live board.
   */
  @Column({ name: 'rerun_of', type: 'uuid', nullable: true })
  rerunOf!: string | null;

  /** The organizer's request it belongs to (rerun_batches). */
  @Column({ name: 'rerun_batch_id', type: 'uuid', nullable: true })
  rerunBatchId!: string | null;

  @Column({ name: 'download_token_hash', type: 'text', nullable: true })
  downloadTokenHash!: string | null;
}
