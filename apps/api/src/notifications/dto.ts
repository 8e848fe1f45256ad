import { CreateWebhookBody } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';

export class CreateWebhookDto extends createZodDto(CreateWebhookBody) {}
