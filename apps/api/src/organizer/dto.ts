import { AdminRunsQuery, DisqualifyBody, ExportQuery } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';

export class DisqualifyDto extends createZodDto(DisqualifyBody) {}
export class AdminRunsQueryDto extends createZodDto(AdminRunsQuery) {}
export class ExportQueryDto extends createZodDto(ExportQuery) {}
