import { HarnessChildEvent, HarnessEvent } from '@dryft/libs';
import type { HarnessResultEvent } from '@dryft/libs';
import { promises as fs } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import type { Outbox } from './outbox';

/**
 * The harness's events channel. node-pty gives the process only the terminal, so the harness's
 * `--events-fd` is made by a tiny trusted wrapper (assets/events-wrapper.py) that connects to a Unix
 * socket the agent listens on, puts the connection on the events fd and execs the harness. The agent
 * accepts exactly one connection and closes the listener at once, so the submission (which the
 * harness runs without that fd) cannot open a second channel; a socket rather than a FIFO means
 * nothing can be written into the channel by reopening a path.
 */
export class EventsChannel {
  private server?: net.Server;
  private ended!: Promise<void>;

  private constructor(
    /** A short private folder of its own: Unix socket paths are limited to 108 bytes. */
    readonly socketDir: string,
  ) {}

  get socketPath(): string {
    return path.join(this.socketDir, 'e.sock');
  }

  /**
   * Listens in a fresh folder named `prefix…` (mode 0700); each newline-ended line the harness
   * writes goes to `onLine`, a failure of the channel to `onProblem`.
   */
  static async open(
    prefix: string,
    onLine: (line: string) => void,
    onProblem: (message: string) => void,
  ): Promise<EventsChannel> {
    const channel = new EventsChannel(await fs.mkdtemp(prefix));
    try {
      await fs.chmod(channel.socketDir, 0o700);
    } catch (err) {
      await channel.remove();
      throw err;
    }
    channel.listen(onLine, onProblem);
    return channel;
  }

  private listen(onLine: (line: string) => void, onProblem: (message: string) => void): void {
    this.ended = new Promise((resolve) => {
      let buffered = '';
      const server = net.createServer({ pauseOnConnect: false }, (conn) => {
        // Exactly one connection: the wrapper's. Close the door behind it.
        server.close();
        conn.setEncoding('utf8');
        conn.on('data', (chunk: string) => {
          buffered += chunk;
          let nl: number;
          while ((nl = buffered.indexOf('\n')) >= 0) {
            onLine(buffered.slice(0, nl));
            buffered = buffered.slice(nl + 1);
          }
        });
        conn.on('end', () => {
          if (buffered.trim()) onLine(buffered);
          resolve();
        });
        conn.on('error', () => resolve());
      });
      server.on('error', (err) => {
        onProblem(`events channel failed: ${err.message}`);
        resolve();
      });
      server.listen(this.socketPath);
      this.server = server;
    });
  }

  /** After the process exited: the rest of its events, for at most `boundMs`; then no more listening. */
  async drain(boundMs: number): Promise<void> {
    await Promise.race([this.ended, new Promise((r) => setTimeout(r, boundMs))]);
    this.server?.close();
  }

  /** Always, whatever happened: the listener closed and the folder gone. */
  async remove(): Promise<void> {
    this.server?.close();
    await fs.rm(this.socketDir, { recursive: true, force: true });
  }
}

/**
 * What the harness says on its events channel, read line by line: its log lines and measurements
 * go to the outbox; its verdict and which child is running are kept here for the agent's own verdict
 * (see verdict.ts), never forwarded.
 */
export class HarnessEvents {
  /** The harness's verdict, once it gave one. */
  result: HarnessResultEvent | null = null;
  /** The candidate's (or training) child was running when the harness last said anything. */
  untrustedRunning = false;

  constructor(private readonly outbox: Pick<Outbox, 'line' | 'event'>) {}

  line(line: string): void {
    if (!line.trim()) return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      this.outbox.line('agent', 'ignored a harness event that is not JSON');
      return;
    }
    const child = HarnessChildEvent.safeParse(json);
    if (child.success) {
      // Kept here, never forwarded: who is blamed if the harness dies without a verdict.
      // The baseline and reference engines are trusted (the harness's own); only the others blame.
      if (child.data.role === 'candidate' || child.data.role === 'training')
        this.untrustedRunning = child.data.state === 'started';
      return;
    }
    const parsed = HarnessEvent.safeParse(json);
    if (!parsed.success) {
      this.outbox.line(
        'agent',
        `ignored a malformed harness event: ${parsed.error.issues[0]?.message ?? ''}`,
      );
      return;
    }
    const event = parsed.data;
    if (event.type === 'log')
      this.outbox.line(
        'harness',
        event.level === 'info' ? event.message : `${event.level}: ${event.message}`,
      );
    else if (event.type === 'result') this.result = event;
    else this.outbox.event(event);
  }
}
