import { ConnectRepositoryBody, UpdateConnectionBody } from '@dryft/libs';
import { createZodDto } from 'nestjs-zod';

export type { ConnectionView, DeliveryView } from '@dryft/libs';

export class ConnectRepositoryDto extends createZodDto(ConnectRepositoryBody) {}
export class UpdateConnectionDto extends createZodDto(UpdateConnectionBody) {}
