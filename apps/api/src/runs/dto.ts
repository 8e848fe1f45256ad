import {
  BaselineRemeasureBody,
  CancelRunBody,
  CreateRunBody,
  LogsQuery,
  QuotaQuery,
  RunsListQuery,
} from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';

export class CreateRunDto extends createZodDto(CreateRunBody.strict()) {}
export class CancelRunDto extends createZodDto(CancelRunBody) {}
export class RunsListQueryDto extends createZodDto(RunsListQuery) {}
export class LogsQueryDto extends createZodDto(LogsQuery) {}
export class QuotaQueryDto extends createZodDto(QuotaQuery) {}
export class BaselineRemeasureDto extends createZodDto(BaselineRemeasureBody) {}
