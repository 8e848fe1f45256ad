import { ChangeRoleBody, CreateTeamBody, JoinTeamBody, LeaveTeamBody } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';

export class CreateTeamDto extends createZodDto(CreateTeamBody) {}
export class JoinTeamDto extends createZodDto(JoinTeamBody) {}
export class ChangeRoleDto extends createZodDto(ChangeRoleBody) {}
export class LeaveTeamDto extends createZodDto(LeaveTeamBody) {}
