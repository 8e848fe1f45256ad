import { AgentDrain, CreateAgentBody } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';

export class CreateAgentDto extends createZodDto(CreateAgentBody) {}
export class DrainAgentDto extends createZodDto(AgentDrain) {}
