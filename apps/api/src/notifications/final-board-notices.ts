import { Inject, Injectable, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { FinalBoardPublishedNotice } from '@dryft/libs';
import { BenchmarksService } from '../benchmarks/benchmarks.service';
import { Clock } from '../common/clock';
import { EventBus } from '../common/event-bus';
import { CONFIG, Config } from '../config/config';

/** The web page of a benchmark's verified final board. */
export function finalBoardUrl(publicUrl: string, benchmarkId: string): string {
  return `${publicUrl.replace(/\/$/, '')}/leaderboard/${encodeURIComponent(benchmarkId)}?board=final`;
}

/**
 * The organizer published a benchmark's final board (`leaderboard.final_published`, emitted once by
 * the replica that published it): every team hears it as the `final_board.published` notice, on
 * `/live` and through their webhooks.
 */
@Injectable()
export class FinalBoardNotices implements OnApplicationBootstrap, OnModuleDestroy {
  private off?: () => void;

  constructor(
    private readonly benchmarks: BenchmarksService,
    private readonly bus: EventBus,
    private readonly clock: Clock,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onApplicationBootstrap(): void {
    this.off = this.bus.on('leaderboard.final_published', (e) => this.published(e));
  }

  onModuleDestroy(): void {
    this.off?.();
  }

  private async published({ benchmarkId, publishedAt }: { benchmarkId: string; publishedAt: number }) {
    const b = await this.benchmarks.get(benchmarkId);
    const notice: FinalBoardPublishedNotice = {
      kind: 'final_board.published',
      benchmarkId: b.id,
      benchmarkTitle: b.title,
      publishedAt: new Date(publishedAt).toISOString(),
      url: finalBoardUrl(this.config.PUBLIC_URL, b.id),
      sentAt: this.clock.now().toISOString(),
    };
    this.bus.emit('benchmark.notice', { notice });
  }
}
