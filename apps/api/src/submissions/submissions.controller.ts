import {
  Body,
  Controller,
  Get,
  Param,
  Post,
  Query,
  Res,
  UploadedFile,
  UseInterceptors,
} from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import 'multer';
import type { Response } from 'express';
import { SubmissionsListQuery } from '@dryft/libs';
import type { SubmissionView, UploadResponse } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';
import { CurrentPrincipal, Principal, Public } from '../common/principal';
import { UuidParam } from '../common/uuid.pipe';
import { SubmissionsService } from './submissions.service';

class SubmissionsListQueryDto extends createZodDto(SubmissionsListQuery) {}

/** Far above every benchmark's own limit: the rules refuse with the exact limit; this only stops abuse. */
const MULTER_LIMIT_BYTES = 8 * 1024 * 1024;

@Controller()
export class SubmissionsController {
  constructor(private readonly submissions: SubmissionsService) {}

  @Post('api/submissions')
  @UseInterceptors(FileInterceptor('file', { limits: { fileSize: MULTER_LIMIT_BYTES, files: 1 } }))
  upload(
    @CurrentPrincipal() principal: Principal,
    @Body() body: Record<string, string>,
    @UploadedFile() file: Express.Multer.File | undefined,
  ): Promise<UploadResponse> {
    return this.submissions.upload(principal, body?.benchmark, file);
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
  async template(@Param('id') id: string, @Res() res: Response): Promise<void> {
    const template = await this.submissions.template(id);
    res.setHeader('Content-Type', template.contentType);
    res.setHeader('Content-Disposition', `attachment; filename="${template.filename}"`);
    res.send(template.bytes);
  }
}
