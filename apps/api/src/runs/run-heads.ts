/**
 * What this process last stored of a running run whose log is still within its head (no pending
 * tail): the figures the next batch is checked and counted against. It lets the next batch go to
 * the database as one statement that compares these figures and writes, instead of BEGIN, a
 * locked read, the insert, the update and COMMIT (five round trips before its lines can go out).
 *
 * Never trusted on its own: the statement stores nothing unless the row still holds exactly these
 * figures (another replica, a cancel, a lapsed lease or the sweeper changed it otherwise), and the
 * batch then takes the locked path, which is the rule.
 */
export interface RunHead {
  runId: string;
  agentId: string;
  benchmarkId: string;
  lastBatchSeq: number;
  lastLogSeq: number;
  logLines: number;
  /** bigint in the database, a string as TypeORM reads it. */
  logBytes: string;
}

/** The heads of the runs this process stores, oldest dropped past `limit` (a run that never ended here). */
export class RunHeads {
  private readonly heads = new Map<string, RunHead>();

  constructor(private readonly limit = 10_000) {}

  get(runId: string): RunHead | undefined {
    return this.heads.get(runId);
  }

  remember(head: RunHead): void {
    // Deleted first so that a run's latest write is also the newest entry (the Map keeps insertion order).
    this.heads.delete(head.runId);
    this.heads.set(head.runId, head);
    if (this.heads.size > this.limit) this.heads.delete(this.heads.keys().next().value!);
  }

  forget(runId: string): void {
    this.heads.delete(runId);
  }

  get size(): number {
    return this.heads.size;
  }
}
