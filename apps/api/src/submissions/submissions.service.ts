import { Inject, Injectable } from '@nestjs/common';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import type { SubmissionUsage, SubmissionView, UploadResponse, Validation } from '@dryft/libs';
import type { EntityManager } from 'typeorm';
import { packFolder } from '@dryft/libs/node';
import { BenchmarksService, EffectiveBenchmark } from '../benchmarks/benchmarks.service';
import { encodeCursor, decodeCursor } from '../common/cursor';
import { Clock } from '../common/clock';
import { badRequest, conflict, forbidden, notFound, tooMany, unprocessable } from '../common/errors';
import type { Principal } from '../common/principal';
import { CONFIG, Config } from '../config/config';
import { BanPolicy } from '../bans/ban-policy';
import { utcDay } from '../runs/run-options';
import { TeamsService } from '../teams/teams.service';
import { UsersService } from '../users/users.service';
import { ArtifactStore } from './artifact-store';
import { SubmissionEntity } from './submission.entity';
import { SubmissionsRepository } from './submissions.repository';
import { packTemplate } from './template-archive';
import { UploadChecker } from './upload-checker';
import { DataSource } from 'typeorm';
import { IdempotencyRepository } from '../runs/idempotency.repository';

/** Upload idempotency keys live as long as run keys (24 h); one left in flight this long is taken over. */
const UPLOAD_KEY_TTL_MS = 24 * 3600_000;
const UPLOAD_KEY_STALE_MS = 60_000;

export interface SubmissionSource {
  source: 'upload' | 'github';
  sourceName: string;
  commitSha?: string | null;
  repositoryId?: string | null;
}

const submissionNotFound = (id: string) =>
  notFound(
    'submission_not_found',
    `No submission ${id} in your team. Copy the Submission ID from its Details panel (the "#7" in a title is not an ID).`,
  );

/** "fast-qwen", "submission": what precedes " #N" in a submission's name. */
export function sourceNameFrom(raw: string): string {
  const stem = raw.replace(/\.(tar\.gz|tgz|py)$/i, '');
  const clean = stem
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60);
  return clean || 'upload';
}

@Injectable()
export class SubmissionsService {
  constructor(
    private readonly submissions: SubmissionsRepository,
    private readonly artifacts: ArtifactStore,
    private readonly benchmarks: BenchmarksService,
    private readonly teams: TeamsService,
    private readonly users: UsersService,
    @Inject(CONFIG) private readonly config: Config,
    private readonly bans: BanPolicy,
    private readonly checker: UploadChecker,
    private readonly clock: Clock,
    private readonly idempotency: IdempotencyRepository,
    private readonly dataSource: DataSource,
  ) {}

  /** A browser or API upload. Uploading alone starts no run. */
  async upload(
    principal: Principal,
    benchmarkId: string | undefined,
    file: { originalname: string; buffer: Buffer } | undefined,
    idempotencyKey?: string,
  ): Promise<UploadResponse & { replayed?: boolean }> {
    if (!benchmarkId) {
      const known = (await this.benchmarks.list()).map((b) => b.id).join(', ');
      throw badRequest('benchmark_required', `Send the form field "benchmark" (one of: ${known}).`);
    }
    if (!file) throw badRequest('file_required', 'Send the submission as the multipart form field "file".');
    const teamId = this.teams.requireActiveTeam(principal);
    await this.teams.authorize(principal, teamId, 'submit');
    const benchmark = await this.benchmarks.get(benchmarkId);
    const name = Buffer.from(file.originalname, 'latin1').toString('utf8');
    const create = () =>
      this.create(teamId, principal.user.id, benchmark, name, file.buffer, {
        source: 'upload',
        sourceName: sourceNameFrom(name),
      });
    if (idempotencyKey === undefined) return create();
    return this.uploadOnce(teamId, idempotencyKey, { benchmarkId, name, bytes: file.buffer }, create);
  }

  /**
   * An upload with an Idempotency-Key (the web sends one per chosen file): the same key and file
   * answer with the first upload's response and store nothing new; another file or benchmark under
   * the key is 422; while the first is still being stored, 409. Keys share the run keys' table,
   * per team, under `upload:`.
   */
  private async uploadOnce(
    teamId: string,
    rawKey: string,
    req: { benchmarkId: string; name: string; bytes: Buffer },
    create: () => Promise<UploadResponse>,
  ): Promise<UploadResponse & { replayed?: boolean }> {
    if (!/^[\x21-\x7e]{1,200}$/.test(rawKey))
      throw badRequest(
        'invalid_idempotency_key',
        'Idempotency-Key must be 1–200 visible ASCII characters (a UUID is ideal).',
      );
    const key = `upload:${rawKey}`;
    const hash = createHash('sha256')
      .update(req.benchmarkId)
      .update('\0')
      .update(req.name)
      .update('\0')
      .update(req.bytes)
      .digest('hex');
    const now = Date.now();
    let claimed = await this.idempotency.claim(teamId, key, hash);
    if (!claimed) {
      const existing = await this.idempotency.find(teamId, key);
      const expired = existing && existing.createdAt.getTime() < now - UPLOAD_KEY_TTL_MS;
      if (existing && !expired && existing.requestHash !== hash)
        throw unprocessable(
          'idempotency_key_reused',
          'This Idempotency-Key was already used for another file; use a new key for each intended upload.',
        );
      if (existing && !expired && existing.state === 'done')
        return { ...(existing.responseBody as UploadResponse), replayed: true };
      claimed = await this.idempotency.takeOver(
        teamId,
        key,
        hash,
        new Date(now - UPLOAD_KEY_STALE_MS),
        new Date(now - UPLOAD_KEY_TTL_MS),
      );
      if (!claimed)
        throw conflict(
          'idempotency_in_flight',
          'This upload is still being stored; wait for it (retry with the same key in a moment).',
        );
    }
    try {
      const res = await create();
      await this.idempotency.complete(this.dataSource.manager, teamId, key, 201, res);
      return res;
    } catch (err) {
      // A refused upload leaves no trace: the same key may be retried once the cause is fixed.
      await this.idempotency.release(teamId, key);
      throw err;
    }
  }

  /**
   * Validates with the shared rules and stores by sha256. Used by uploads and by repository pushes,
   * so both are held to exactly the same rules.
   */
  async create(
    teamId: string,
    userId: string,
    benchmark: EffectiveBenchmark,
    filename: string,
    bytes: Buffer,
    source: SubmissionSource,
  ): Promise<UploadResponse> {
    await this.bans.assertCanAct({ userId, teamId, benchmarkId: benchmark.id }, 'upload submissions');
    if (!benchmark.submissionsOpen) {
      throw forbidden(
        'submissions_closed',
        `Submissions to ${benchmark.title} are closed by the organizer. You can prepare code and read existing results meanwhile.`,
      );
    }
    // Refused before the check costs anything; checked again under the team's lock when stored.
    await this.assertQuotas(teamId, bytes.length);
    const validation = await this.validate(benchmark, filename, bytes);
    if (!validation.ok) {
      const list = validation.problems.map((p) => `${p.rule}: ${p.message}`).join(' ');
      throw unprocessable(
        'invalid_submission',
        `The submission breaks ${validation.problems.length === 1 ? 'a rule' : 'the rules'}. ${list}`,
        {
          verdicts: validation.verdicts,
          problems: validation.problems,
        },
      );
    }
    const entity = await this.submissions.createNumbered(
      {
        benchmarkId: benchmark.id,
        teamId,
        createdBy: userId,
        source: source.source,
        sourceName: source.sourceName,
        kind: benchmark.kind === 'decode' ? 'archive' : 'file',
        sizeBytes: bytes.length,
        fileCount: validation.files.length,
        files: validation.files.map((f) => ({ path: f.path, size: f.size })),
        commitSha: source.commitSha ?? null,
        repositoryId: source.repositoryId ?? null,
      },
      async (manager) => {
        await this.assertQuotas(teamId, bytes.length, manager);
        return { sha256: await this.artifacts.put(bytes) };
      },
    );
    return { submission: await this.view(entity), verdicts: validation.verdicts };
  }

  /** What a team stores against its quotas (TEAM_UPLOADS_PER_DAY, TEAM_STORAGE_MIB). */
  async usage(teamId: string, manager?: EntityManager): Promise<SubmissionUsage> {
    const { day, resetsAt } = utcDay(this.clock.now());
    const used = await this.submissions.usage(teamId, new Date(`${day}T00:00:00.000Z`), manager);
    return {
      uploadsToday: used.since,
      uploadsPerDay: this.config.TEAM_UPLOADS_PER_DAY,
      uploadsResetAt: resetsAt.toISOString(),
      storedBytes: used.storedBytes,
      storageLimitBytes: Math.floor(this.config.TEAM_STORAGE_MIB * 1024 * 1024),
    };
  }

  /** 429 `upload_quota` (resets at the next UTC midnight) or 409 `storage_quota` (does not reset by itself). */
  private async assertQuotas(teamId: string, size: number, manager?: EntityManager): Promise<void> {
    const u = await this.usage(teamId, manager);
    if (u.uploadsToday >= u.uploadsPerDay) {
      throw tooMany(
        'upload_quota',
        `Your team stored ${u.uploadsToday} submissions today (UTC), the limit of ${u.uploadsPerDay} a day (uploads and repository pushes together); it resets at ${u.uploadsResetAt}. Start runs from the submissions you already have until then.`,
        { used: u.uploadsToday, limit: u.uploadsPerDay, resetsAt: u.uploadsResetAt },
      );
    }
    if (u.storedBytes + size > u.storageLimitBytes) {
      const mib = (n: number) =>
        n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : `${(n / 1024).toFixed(1)} KiB`;
      throw conflict(
        'storage_quota',
        `Your team stores ${mib(u.storedBytes)} of submissions (${u.storedBytes} bytes); this ${size}-byte upload would pass the limit of ${mib(u.storageLimitBytes)} per team. This limit does not reset by itself: ask the hub's organizer to raise it (TEAM_STORAGE_MIB).`,
        { usedBytes: u.storedBytes, limitBytes: u.storageLimitBytes, uploadBytes: size, resetsAt: null },
      );
    }
  }

  /** The shared rules, on the checker's worker threads (never on the event loop). */
  async validate(benchmark: EffectiveBenchmark, filename: string, bytes: Buffer): Promise<Validation> {
    if (benchmark.kind === 'training') return this.checker.checkFile(filename, bytes);
    return this.checker.checkArchive(bytes);
  }

  async get(principal: Principal, id: string): Promise<SubmissionView> {
    return this.view(await this.getAuthorized(principal, id, 'read'));
  }

  /** The gate for a submission: someone outside its team gets 404, as if it did not exist. */
  async getAuthorized(principal: Principal, id: string, action: 'read' | 'run'): Promise<SubmissionEntity> {
    const entity = await this.submissions.findById(id);
    if (!entity) throw submissionNotFound(id);
    try {
      await this.teams.authorize(principal, entity.teamId, action);
    } catch (err) {
      if ((err as { status?: number }).status === 404) throw submissionNotFound(id);
      throw err;
    }
    return entity;
  }

  /** Any team's submission, for an organizer's power (the caller checks that it is one). */
  async findForOrganizer(id: string): Promise<SubmissionEntity> {
    const entity = await this.submissions.findById(id);
    if (!entity)
      throw notFound(
        'submission_not_found',
        `No submission ${id}. Copy the Submission ID from the run's page.`,
      );
    return entity;
  }

  /** Whether the caller is a member of the submission's team (its own code, not an organizer's read). */
  isMember(principal: Principal, entity: SubmissionEntity): Promise<boolean> {
    return this.teams.isMember(entity.teamId, principal.user.id);
  }

  async list(principal: Principal, opts: { benchmarkId?: string; cursor?: string; limit: number }) {
    const teamId = this.teams.requireActiveTeam(principal);
    await this.teams.authorize(principal, teamId, 'read');
    const rows = await this.submissions.listForTeam(teamId, {
      benchmarkId: opts.benchmarkId,
      before: decodeCursor(opts.cursor),
      limit: opts.limit + 1,
    });
    const page = rows.slice(0, opts.limit);
    const items = await Promise.all(page.map((r) => this.view(r)));
    const last = page[page.length - 1];
    return {
      items,
      nextCursor: rows.length > opts.limit && last ? encodeCursor(last.createdAt, last.id) : null,
    };
  }

  /**
   * The hub a template names: PUBLIC_URL where it was set (always in production), else the address
   * the request came to (a development hub on any port, reached by any name).
   */
  hubUrl(requestOrigin?: string): string {
    if (this.config.publicUrlSet || this.config.isProduction || !requestOrigin) return this.config.PUBLIC_URL;
    return requestOrigin.replace(/\/+$/, '');
  }

  /** The starter served by "Download starter archive": packed exactly as an upload must be. */
  async starter(benchmarkId: string): Promise<{ filename: string; contentType: string; bytes: Buffer }> {
    const benchmark = await this.benchmarks.get(benchmarkId);
    const dir = path.resolve(this.config.rootDir, benchmark.starter);
    if (benchmark.kind === 'training') {
      const file = path.join(dir, 'submission.py');
      return {
        filename: 'submission.py',
        contentType: 'text/x-python; charset=utf-8',
        bytes: await this.readStarter(file),
      };
    }
    try {
      return {
        filename: `${benchmark.id}-starter.tar.gz`,
        contentType: 'application/gzip',
        bytes: await packFolder(path.join(dir, 'engine')),
      };
    } catch {
      throw notFound(
        'starter_missing',
        `This hub has no starter for ${benchmark.id} (${benchmark.starter}/engine).`,
      );
    }
  }

  /**
   * "Download template": the whole starter tree (README, engine contract, AGENTS.md, agent/,
   * installers, engine/ …) as a deterministic .tar.gz under one top folder named after the starter,
   * for people who will not use GitHub's "Use this template". Journals, bin/dryft and tokens never ship.
   */
  async template(
    benchmarkId: string,
    requestOrigin?: string,
  ): Promise<{ filename: string; contentType: string; bytes: Buffer }> {
    const benchmark = await this.benchmarks.get(benchmarkId);
    const dir = path.resolve(this.config.rootDir, benchmark.starter);
    const top = path.basename(dir);
    const st = await fs.stat(dir).catch(() => null);
    if (!st?.isDirectory())
      throw notFound(
        'starter_missing',
        `This hub has no starter for ${benchmark.id} (${benchmark.starter}).`,
      );
    return {
      filename: `${top}-template.tar.gz`,
      contentType: 'application/gzip',
      bytes: await packTemplate(dir, top, { hub: this.hubUrl(requestOrigin) }),
    };
  }

  readArtifact(sha256: string): Promise<Buffer> {
    return this.artifacts.read(sha256);
  }

  findById(id: string): Promise<SubmissionEntity | null> {
    return this.submissions.findById(id);
  }

  async view(s: SubmissionEntity): Promise<SubmissionView> {
    const creator = await this.users.findById(s.createdBy);
    return {
      id: s.id,
      benchmarkId: s.benchmarkId,
      teamId: s.teamId,
      name: `${s.sourceName} #${s.number}`,
      source: s.source,
      sourceName: s.sourceName,
      number: s.number,
      kind: s.kind,
      sha256: s.sha256,
      sizeBytes: s.sizeBytes,
      fileCount: s.fileCount,
      files: s.files,
      commitSha: s.commitSha,
      createdBy: creator?.login ?? 'unknown',
      createdAt: s.createdAt.toISOString(),
    };
  }

  private async readStarter(file: string): Promise<Buffer> {
    try {
      return await fs.readFile(file);
    } catch {
      throw notFound('starter_missing', `This hub has no starter file ${path.basename(file)}.`);
    }
  }
}
