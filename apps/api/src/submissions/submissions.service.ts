import { Inject, Injectable } from '@nestjs/common';
import * as path from 'node:path';
import { promises as fs } from 'node:fs';
import type { SubmissionView, UploadResponse, Validation } from '@dryft/libs';
import { validateSingleFile } from '@dryft/libs';
import { packFolder, validateArchive } from '@dryft/libs/node';
import { BenchmarksService, EffectiveBenchmark } from '../benchmarks/benchmarks.service';
import { encodeCursor, decodeCursor } from '../common/cursor';
import { badRequest, forbidden, notFound, unprocessable } from '../common/errors';
import type { Principal } from '../common/principal';
import { CONFIG, Config } from '../config/config';
import { BanPolicy } from '../bans/ban-policy';
import { TeamsService } from '../teams/teams.service';
import { UsersService } from '../users/users.service';
import { ArtifactStore } from './artifact-store';
import { SubmissionEntity } from './submission.entity';
import { SubmissionsRepository } from './submissions.repository';
import { packTemplate } from './template-archive';

export interface SubmissionSource {
  source: 'upload' | 'github';
  sourceName: string;
  commitSha?: string | null;
  repositoryId?: string | null;
}

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
  ) {}

  /** A browser or API upload. Uploading alone starts no run. */
  async upload(
    principal: Principal,
    benchmarkId: string | undefined,
    file: { originalname: string; buffer: Buffer } | undefined,
  ): Promise<UploadResponse> {
    if (!benchmarkId) {
      const known = (await this.benchmarks.list()).map((b) => b.id).join(', ');
      throw badRequest('benchmark_required', `Send the form field "benchmark" (one of: ${known}).`);
    }
    if (!file) throw badRequest('file_required', 'Send the submission as the multipart form field "file".');
    const teamId = this.teams.requireActiveTeam(principal);
    await this.teams.authorize(principal, teamId, 'submit');
    const benchmark = await this.benchmarks.get(benchmarkId);
    const name = Buffer.from(file.originalname, 'latin1').toString('utf8');
    return this.create(teamId, principal.user.id, benchmark, name, file.buffer, {
      source: 'upload',
      sourceName: sourceNameFrom(name),
    });
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
    const sha256 = await this.artifacts.put(bytes);
    const entity = await this.submissions.createNumbered({
      benchmarkId: benchmark.id,
      teamId,
      createdBy: userId,
      source: source.source,
      sourceName: source.sourceName,
      kind: benchmark.kind === 'decode' ? 'archive' : 'file',
      sha256,
      sizeBytes: bytes.length,
      fileCount: validation.files.length,
      files: validation.files.map((f) => ({ path: f.path, size: f.size })),
      commitSha: source.commitSha ?? null,
      repositoryId: source.repositoryId ?? null,
    });
    return { submission: await this.view(entity), verdicts: validation.verdicts };
  }

  async validate(benchmark: EffectiveBenchmark, filename: string, bytes: Buffer): Promise<Validation> {
    if (benchmark.kind === 'training') return validateSingleFile(filename, bytes);
    return validateArchive(bytes);
  }

  async get(principal: Principal, id: string): Promise<SubmissionView> {
    return this.view(await this.getAuthorized(principal, id, 'read'));
  }

  /** The gate for a submission: someone outside its team gets 404, as if it did not exist. */
  async getAuthorized(principal: Principal, id: string, action: 'read' | 'run'): Promise<SubmissionEntity> {
    const entity = await this.submissions.findById(id);
    if (!entity)
      throw notFound(
        'submission_not_found',
        `No submission ${id} in your team. Copy the Submission ID from its Details panel (the "#7" in a title is not an ID).`,
      );
    try {
      await this.teams.authorize(principal, entity.teamId, action);
    } catch (err) {
      if ((err as { status?: number }).status === 404) {
        throw notFound(
          'submission_not_found',
          `No submission ${id} in your team. Copy the Submission ID from its Details panel (the "#7" in a title is not an ID).`,
        );
      }
      throw err;
    }
    return entity;
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
  async template(benchmarkId: string): Promise<{ filename: string; contentType: string; bytes: Buffer }> {
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
      bytes: await packTemplate(dir, top),
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
