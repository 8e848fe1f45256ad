import { SessionEntity } from '../auth/session.entity';
import { BenchmarkSettingsEntity } from '../benchmarks/benchmark-settings.entity';
import { MembershipEntity } from '../teams/membership.entity';
import { TeamEntity } from '../teams/team.entity';
import { ApiTokenEntity } from '../tokens/api-token.entity';
import { UserEntity } from '../users/user.entity';

/** Every entity; the migrations must describe exactly these (a test checks). */
export const ENTITIES = [UserEntity, SessionEntity, TeamEntity, MembershipEntity, ApiTokenEntity, BenchmarkSettingsEntity];
