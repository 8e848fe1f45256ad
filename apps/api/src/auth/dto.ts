import { DevSignInBody } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';

export class DevSignInDto extends createZodDto(DevSignInBody) {}
