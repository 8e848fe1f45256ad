import { MoveScheduleBody, ScheduleBody, SetRoundBody } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';

export class SetRoundDto extends createZodDto(SetRoundBody) {}
export class ScheduleDto extends createZodDto(ScheduleBody) {}
export class MoveScheduleDto extends createZodDto(MoveScheduleBody) {}
