import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeError } from '../common/describe-error';
import { CONFIG, Config } from '../config/config';
import { HubMetrics } from './hub-metrics';

/**
 * METRICS_PORT: a listener of its own that answers `GET /metrics` and nothing else, without
 * credentials, for a Prometheus on a private network. It never serves the API, so opening it to the
 * scraper's network opens nothing more.
 */
@Injectable()
export class MetricsServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private server?: Server;

  constructor(
    private readonly metrics: HubMetrics,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /** The port it listens on (METRICS_PORT=0 picks one), or null without METRICS_PORT. */
  get port(): number | null {
    const address = this.server?.address();
    return address && typeof address === 'object' ? (address as AddressInfo).port : null;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.METRICS_PORT === undefined) return;
    if (!this.config.METRICS_ENABLED) {
      this.logger.warn('METRICS_PORT is set but METRICS_ENABLED=false: no metrics listener is started');
      return;
    }
    const server = createServer((req, res) => {
      const path = (req.url ?? '').split('?')[0];
      if (path !== '/metrics') {
        res.writeHead(404, { 'Content-Type': 'text/plain' }).end('This port serves only GET /metrics.\n');
        return;
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain' }).end('Use GET /metrics.\n');
        return;
      }
      this.metrics.text().then(
        (text) => res.writeHead(200, { 'Content-Type': this.metrics.contentType }).end(text),
        (err: unknown) => {
          this.logger.warn(`a scrape failed: ${describeError(err)}`);
          res
            .writeHead(503, { 'Content-Type': 'text/plain' })
            .end(`Metrics unavailable: ${describeError(err)}\n`);
        },
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          new Error(
            `METRICS_PORT ${this.config.METRICS_PORT} on ${this.config.METRICS_HOST}: ${err.code ?? err.message}; pick a free port or unset METRICS_PORT`,
          ),
        ),
      );
      server.listen(this.config.METRICS_PORT, this.config.METRICS_HOST, () => resolve());
    });
    this.server = server;
    this.logger.log(`metrics on http://${this.config.METRICS_HOST}:${this.port}/metrics`);
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections?.();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
