import { CancelRunBody, CreateRunBody } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';

export class CreateRunDto extends createZodDto(CreateRunBody.strict()) {}
export class CancelRunDto extends createZodDto(CancelRunBody) {}
