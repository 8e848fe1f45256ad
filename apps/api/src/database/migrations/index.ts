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
];
