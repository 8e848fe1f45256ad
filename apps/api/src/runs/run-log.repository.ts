import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { TransactionalRepository } from '../common/transactional-repository';
import { preparedQuery } from '../database/prepared-query';
import type { LogChunk, RunHead } from './run-log';
import type { RunEntity } from './run.entity';

/**
 * The insert of one chunk of a run's log from parameter `$first` on (first seq, last seq, line
 * count, the lines: {@link chunkParams}); `$1` is the run id. A chunk already stored (the same
 * run and last seq: a resend) is not stored again.
 */
const insertChunkFrom = (first: number): string =>
  `INSERT INTO run_log_chunks (run_id, first_seq, last_seq, line_count, lines)
   SELECT $1::uuid, $${first}::int, $${first + 1}::int, $${first + 2}::int, $${first + 3}::text`;

/** The four values {@link insertChunkFrom} reads. */
const chunkParams = (c: LogChunk): unknown[] => [c.firstSeq, c.lastSeq, c.lineCount, c.lines];

/**
 * The statements of a run's log (run-log.ts holds its rules): chunk rows in `run_log_chunks` and
 * the log counters and pending tail on the run row. A run's status is never changed here; that is
 * {@link RunQueue}'s (run-queue.ts).
 */
@Injectable()
export class RunLogRepository extends TransactionalRepository {
  constructor(dataSource: DataSource) {
    super(dataSource);
  }

  /** One chunk row, unless that run already has a chunk with this last seq (a resend). */
  async insertChunk(runId: string, chunk: LogChunk): Promise<void> {
    await this.manager.query(`${insertChunkFrom(2)} ON CONFLICT DO NOTHING`, [runId, ...chunkParams(chunk)]);
  }

  /**
   * A log-only batch of a running run still within its log head, in one statement (one round trip,
   * its own transaction): the run row moves from `was` to `now` and the chunk of lines is inserted, only if
   * the row still holds exactly `was` (its agent, running, no pending tail, the same seq and log
   * counters; the update waits for a concurrent writer and checks its result). False: nothing was
   * written, the caller takes the locked path.
   */
  async recordHeadBatch(was: RunHead, now: RunHead, chunk: LogChunk | null): Promise<boolean> {
    const rows = await preparedQuery<{ claimed: number }>(
      this.dataSource,
      'dryft_record_head_batch',
      `WITH claimed AS (
         UPDATE runs SET last_batch_seq = $7, last_log_seq = $8, log_lines = $9, log_bytes = $10
         WHERE id = $1 AND agent_id = $6 AND status = 'running' AND log_tail IS NULL
           AND last_batch_seq = $11 AND last_log_seq = $12 AND log_lines = $13 AND log_bytes = $14
         RETURNING id
       ), stored AS (
         ${insertChunkFrom(2)} WHERE $4::int > 0 AND EXISTS (SELECT 1 FROM claimed)
         ON CONFLICT DO NOTHING
       )
       SELECT count(*)::int AS claimed FROM claimed`,
      [
        was.runId,
        ...(chunk ? chunkParams(chunk) : [0, 0, 0, '[]']), // $2-$5: no lines, no chunk
        was.agentId,
        now.lastBatchSeq,
        now.lastLogSeq,
        now.logLines,
        now.logBytes,
        was.lastBatchSeq,
        was.lastLogSeq,
        was.logLines,
        was.logBytes,
      ],
    );
    return rows[0]?.claimed === 1;
  }

  /** The capped log's end was stored: its pending tail is cleared and the counters advance. */
  async clearTail(run: RunEntity): Promise<void> {
    await this.manager.query(
      'UPDATE runs SET log_tail = NULL, log_lines = $2, log_bytes = $3, last_log_seq = $4 WHERE id = $1',
      [run.id, run.logLines, run.logBytes, run.lastLogSeq],
    );
  }

  /**
   * The chunks (their lines' JSON, in order) that hold the first `limit` lines past seq `after`:
   * one query. A chunk is read only while the chunks before it surely hold fewer than `limit` lines
   * past `after`. The first may start at or before `after`: it surely holds its lines but those that
   * could have a seq from its first to `after` (seqs increase; at least one, since it ends past `after`).
   */
  async chunksAfter(runId: string, after: number, limit: number): Promise<string[]> {
    const rows: { lines: string }[] = await this.manager.query(
      `SELECT lines FROM (
         SELECT last_seq, lines, sum(past) OVER w - past AS before
         FROM (
           SELECT last_seq, lines, greatest(1, line_count - greatest(0, $2 - first_seq + 1)) AS past
           FROM run_log_chunks WHERE run_id = $1 AND last_seq > $2
           ORDER BY last_seq LIMIT $3
         ) c
         WINDOW w AS (ORDER BY last_seq)
       ) c WHERE before < $3 ORDER BY last_seq`,
      [runId, after, limit],
    );
    return rows.map((r) => r.lines);
  }
}
