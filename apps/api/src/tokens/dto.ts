import { CreateTokenBody } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';

export class CreateTokenDto extends createZodDto(CreateTokenBody) {}
