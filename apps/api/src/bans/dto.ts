import { CreateBanBody, LiftBody } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';

export class CreateBanDto extends createZodDto(CreateBanBody) {}
export class LiftBanDto extends createZodDto(LiftBody) {}
