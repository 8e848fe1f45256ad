import {
  Body,
  Controller,
  Get,
  Headers,
  Param,
  Post,
  Query,
  Req,
  Res,
  UploadedFile,
  UseInterceptors,
} from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import 'multer';
import type { Request, Response } from 'express';
import { SubmissionsListQuery } from '@dryft/libs';
import type { SubmissionCodeView, SubmissionView, UploadResponse } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';
import { CurrentPrincipal, Principal, Public } from '../common/principal';
import { UuidParam } from '../common/uuid.pipe';
import { RateLimit } from '../rate-limits/rate-limit.guard';
import { SubmissionCodeService } from './submission-code.service';
import { SubmissionsService } from './submissions.service';

class SubmissionsListQueryDto extends createZodDto(SubmissionsListQuery) {}

/** Far above every benchmark's own limit: the rules refuse with the exact limit; this only stops abuse. */
const MULTER_LIMIT_BYTES = 8 * 1024 * 1024;

@Controller()
export class SubmissionsController {
  constructor(
    private readonly submissions: SubmissionsService,
    private readonly code: SubmissionCodeService,
  ) {}

  @Post('api/submissions')
  @RateLimit('uploads')
  @UseInterceptors(FileInterceptor('file', { limits: { fileSize: MULTER_LIMIT_BYTES, files: 1 } }))
  async upload(
    @CurrentPrincipal() principal: Principal,
    @Body() body: Record<string, string>,
    @UploadedFile() file: Express.Multer.File | undefined,
    @Headers('idempotency-key') key: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<UploadResponse> {
    const { replayed, ...out } = await this.submissions.upload(principal, body?.benchmark, file, key);
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    return out;
  }

  @Get('api/submissions')
  list(@CurrentPrincipal() principal: Principal, @Query() query: SubmissionsListQueryDto) {
    return this.submissions.list(principal, {
      benchmarkId: query.benchmark,
      cursor: query.cursor,
      limit: query.limit ?? 20,
    });
  }

  @Get('api/submissions/:id')
  get(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('submission')) id: string,
  ): Promise<SubmissionView> {
    return this.submissions.get(principal, id);
  }

  /** The submission's files, read only (the code view); an organizer's read of another team's is audited. */
  @Get('api/submissions/:id/code')
  files(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('submission')) id: string,
  ): Promise<SubmissionCodeView> {
    return this.code.code(principal, id);
  }

  /** The archive or submission.py exactly as stored; an organizer's download of another team's is audited. */
  @Get('api/submissions/:id/download')
  async download(
    @CurrentPrincipal() principal: Principal,
    @Param('id', new UuidParam('submission')) id: string,
    @Res() res: Response,
  ): Promise<void> {
    const file = await this.code.download(principal, id);
    res.setHeader('Content-Type', file.contentType);
    res.setHeader('Content-Disposition', `attachment; filename="${file.filename}"`);
    res.setHeader('Cache-Control', 'private, no-store');
    res.send(file.bytes);
  }

  /** "Download starter archive" (decode) or "Download sample" (single file). Public: the starter is no secret. */
  @Public()
  @Get('api/benchmarks/:id/starter')
  async starter(@Param('id') id: string, @Res() res: Response): Promise<void> {
    const starter = await this.submissions.starter(id);
    res.setHeader('Content-Type', starter.contentType);
    res.setHeader('Content-Disposition', `attachment; filename="${starter.filename}"`);
    res.send(starter.bytes);
  }

  /** "Download template": the whole starter repository as a .tar.gz, for people who will not use GitHub's template button. */
  @Public()
  @Get('api/benchmarks/:id/template')
  async template(@Param('id') id: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const host = req.get('host');
    const template = await this.submissions.template(id, host ? `${req.protocol}://${host}` : undefined);
    res.setHeader('Content-Type', template.contentType);
    res.setHeader('Content-Disposition', `attachment; filename="${template.filename}"`);
    res.send(template.bytes);
  }
}
