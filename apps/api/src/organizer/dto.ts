import { AdminRunsQuery, DisqualifyBody, ExportQuery, RefundRunBody } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';

export class DisqualifyDto extends createZodDto(DisqualifyBody) {}
export class RefundRunDto extends createZodDto(RefundRunBody) {}
export class AdminRunsQueryDto extends createZodDto(AdminRunsQuery) {}
export class ExportQueryDto extends createZodDto(ExportQuery) {}
