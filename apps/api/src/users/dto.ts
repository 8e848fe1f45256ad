import { SwitchTeamBody } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';

export class SwitchTeamDto extends createZodDto(SwitchTeamBody) {}
