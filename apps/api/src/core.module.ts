import { DynamicModule, Global, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { BenchmarkRegistry } from './benchmarks/benchmark-registry';
import { Clock } from './common/clock';
import { EventBus } from './common/event-bus';
import { Jobs } from './common/jobs';
import { CONFIG, Config } from './config/config';
import { ArtifactStore, DiskArtifactStore } from './submissions/artifact-store';

export interface CoreDeps {
  config: Config;
  dataSource: DataSource;
  registry: BenchmarkRegistry;
  clock?: Clock;
  artifacts?: ArtifactStore;
}

/** The side effects every domain shares, provided once so tests can pass their own. */
@Global()
@Module({})
export class CoreModule {
  static forRoot(deps: CoreDeps): DynamicModule {
    return {
      module: CoreModule,
      providers: [
        { provide: CONFIG, useValue: deps.config },
        { provide: DataSource, useValue: deps.dataSource },
        { provide: BenchmarkRegistry, useValue: deps.registry },
        { provide: Clock, useValue: deps.clock ?? new Clock() },
        {
          provide: ArtifactStore,
          useValue: deps.artifacts ?? new DiskArtifactStore(deps.config.artifactDir),
        },
        EventBus,
        Jobs,
      ],
      exports: [CONFIG, DataSource, BenchmarkRegistry, Clock, EventBus, ArtifactStore, Jobs],
    };
  }
}
