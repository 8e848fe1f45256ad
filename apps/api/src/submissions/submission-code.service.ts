import { Injectable } from '@nestjs/common';
import type { SubmissionCodeView } from '@dryft/libs';
import { AuditService } from '../audit/audit.service';
import type { Principal } from '../common/principal';
import { ArtifactStore } from './artifact-store';
import type { SubmissionEntity } from './submission.entity';
import { submissionFiles } from './submission-files';
import { SubmissionsService } from './submissions.service';

export interface SubmissionDownload {
  bytes: Buffer;
  filename: string;
  contentType: string;
}

/**
 * Reading a submission's code: its own team's members may, as they may read the submission;
 * organizers (signed in to the web, ADMIN_LOGINS) may read any team's, and each such read is in
 * the audit log; anyone else is told there is no such submission, as for the submission itself.
 */
@Injectable()
export class SubmissionCodeService {
  constructor(
    private readonly submissions: SubmissionsService,
    private readonly artifacts: ArtifactStore,
    private readonly audit: AuditService,
  ) {}

  async code(principal: Principal, id: string): Promise<SubmissionCodeView> {
    const { entity, audited } = await this.access(principal, id, 'submission.view_code');
    const bytes = await this.artifacts.read(entity.sha256);
    return {
      submission: await this.submissions.view(entity),
      files: await submissionFiles(entity.kind, bytes),
      audited,
    };
  }

  async download(principal: Principal, id: string): Promise<SubmissionDownload> {
    const { entity } = await this.access(principal, id, 'submission.download');
    const bytes = await this.artifacts.read(entity.sha256);
    return entity.kind === 'file'
      ? { bytes, filename: 'submission.py', contentType: 'text/x-python; charset=utf-8' }
      : { bytes, filename: `${entity.sourceName}-${entity.number}.tar.gz`, contentType: 'application/gzip' };
  }

  private async access(
    principal: Principal,
    id: string,
    action: 'submission.view_code' | 'submission.download',
  ): Promise<{ entity: SubmissionEntity; audited: boolean }> {
    const organizer = principal.isAdmin && principal.via === 'session';
    if (!organizer)
      return { entity: await this.submissions.getAuthorized(principal, id, 'read'), audited: false };
    const entity = await this.submissions.findForOrganizer(id);
    const member = await this.submissions.isMember(principal, entity);
    if (!member) {
      await this.audit.record(principal, {
        action,
        target: { kind: 'submission', id: entity.id },
        benchmarkId: entity.benchmarkId,
        details: {
          teamId: entity.teamId,
          name: `${entity.sourceName} #${entity.number}`,
          sha256: entity.sha256,
        },
      });
    }
    return { entity, audited: !member };
  }
}
