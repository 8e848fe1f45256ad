import { ClosingNotice1796197100000 } from './1796197100000-ClosingNotice';
import { RunRuntime1796197821858 } from './1796197821858-RunRuntime';
import { Reruns1796198000000 } from './1796198000000-Reruns';
import { QuotaGrants1796187771515 } from './1796187771515-QuotaGrants';
import { RunRevision1796197000000 } from './1796197000000-RunRevision';
import { TeamWebhooks1796042501049 } from './1796042501049-TeamWebhooks';
import { RoundClock1796042132522 } from './1796042132522-RoundClock';
import { OrganizerConsole1796041358443 } from './1796041358443-OrganizerConsole';
import { ScoreInterval1796041522086 } from './1796041522086-ScoreInterval';
import { RulesChangedAt1796042021934 } from './1796042021934-RulesChangedAt';
import { GithubApp1796016798089 } from './1796016798089-GithubApp';
import { LeaseLost1796100000000 } from './1796100000000-LeaseLost';
import { LogCap1796100000001 } from './1796100000001-LogCap';
import { BaselineRemeasure1796100000002 } from './1796100000002-BaselineRemeasure';
import { LogChunks1796100000003 } from './1796100000003-LogChunks';
import { HubIdentity1796100000004 } from './1796100000004-HubIdentity';
import { SubmissionNumbersPerBenchmark1796100000005 } from './1796100000005-SubmissionNumbersPerBenchmark';
import { TokenRevokedReason1796100000030 } from './1796100000030-TokenRevokedReason';
import { Calibration1796174025904 } from './1796174025904-Calibration';
import type { MigrationInterface } from 'typeorm';
import { Agents1796015857416 } from './1796015857416-Agents';
import { RunsCore1796015525700 } from './1796015525700-RunsCore';
import { Foundation1796015261736 } from './1796015261736-Foundation';
// Checked-in migrations, oldest first. Generate a new one with `npm run migration:generate -- Name`.
export const MIGRATIONS: (new () => MigrationInterface)[] = [
  Foundation1796015261736,
  RunsCore1796015525700,
  Agents1796015857416,
  GithubApp1796016798089,
  OrganizerConsole1796041358443,
  ScoreInterval1796041522086,
  RulesChangedAt1796042021934,
  RoundClock1796042132522,
  TeamWebhooks1796042501049,
  LeaseLost1796100000000,
  LogCap1796100000001,
  BaselineRemeasure1796100000002,
  LogChunks1796100000003,
  HubIdentity1796100000004,
  SubmissionNumbersPerBenchmark1796100000005,
  TokenRevokedReason1796100000030,
  Calibration1796174025904,
  QuotaGrants1796187771515,
  RunRevision1796197000000,
  ClosingNotice1796197100000,
  RunRuntime1796197821858,
  Reruns1796198000000,
];
