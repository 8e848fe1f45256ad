import { Injectable } from '@nestjs/common';
import type { AuditAction, AuditEntryView } from '@dryft/libs';
import { decodeCursor, encodeCursor } from '../common/cursor';
import type { Principal } from '../common/principal';
import type { AuditEntryEntity } from './audit-entry.entity';
import { AuditRepository } from './audit.repository';

export interface AuditRecord {
  action: AuditAction;
  target: AuditEntryView['target'];
  benchmarkId?: string | null;
  reason?: string | null;
  details?: Record<string, unknown>;
}

/** Who did what to what, when and why: every organizer action, append-only. */
@Injectable()
export class AuditService {
  constructor(private readonly audit: AuditRepository) {}

  /** `actor`: the caller, or (for a scheduled action) the organizer who scheduled it. */
  async record(
    actor: Pick<Principal, 'user'> | { user: { id: string; login: string } },
    entry: AuditRecord,
  ): Promise<AuditEntryView> {
    const row = await this.audit.insert({
      actorId: actor.user.id,
      actorLogin: actor.user.login,
      action: entry.action,
      targetKind: entry.target.kind,
      targetId: entry.target.id,
      benchmarkId: entry.benchmarkId ?? null,
      reason: entry.reason ?? null,
      details: entry.details ?? {},
    });
    return view(row);
  }

  async list(opts: {
    benchmarkId?: string;
    action?: string;
    targetId?: string;
    cursor?: string;
    limit: number;
  }): Promise<{ items: AuditEntryView[]; nextCursor: string | null }> {
    const rows = await this.audit.list({ ...opts, before: decodeCursor(opts.cursor), limit: opts.limit + 1 });
    const page = rows.slice(0, opts.limit);
    const last = page[page.length - 1];
    return {
      items: page.map(view),
      nextCursor: rows.length > opts.limit && last ? encodeCursor(last.at, last.id) : null,
    };
  }
}

function view(r: AuditEntryEntity): AuditEntryView {
  return {
    id: r.id,
    at: r.at.toISOString(),
    actor: { id: r.actorId, login: r.actorLogin },
    action: r.action as AuditAction,
    target: { kind: r.targetKind as AuditEntryView['target']['kind'], id: r.targetId },
    benchmarkId: r.benchmarkId,
    reason: r.reason,
    details: r.details,
  };
}
