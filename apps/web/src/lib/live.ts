import { io, type Socket } from 'socket.io-client';
import {
  JoinAck,
  LiveServerToClient,
  refusal,
  type LiveServerEvents,
  type LogsPage,
  type RunFollowerTransport,
  type RunView,
  socketRunTransport,
} from '@dryft/libs';
import { api } from './api';

/**
 * One `/live` socket for the tab. The session cookie authenticates it at the handshake; signed-out
 * spectators connect without one and may join leaderboards only. Rooms are re-joined by the pages
 * on every (re)connect, since the server forgets them with the old connection.
 */
let socket: Socket | null = null;

/** Backoff with jitter for reconnects socket.io leaves to us: 125 ms to 5 s, doubling per attempt. */
export function reconnectDelay(attempt: number, random: () => number = Math.random): number {
  const cap = Math.min(5_000, 250 * 2 ** Math.min(attempt, 10));
  return Math.round(cap / 2 + random() * (cap / 2));
}

/**
 * socket.io-client reconnects by itself after a lost network, but never after the server closed the
 * connection ("io server disconnect": a clean API restart or shutdown) nor after a refused
 * handshake. This reconnects in both cases, with backoff; the pages then re-join their rooms from
 * where they were (`run.join` with `afterSeq` = the last line shown), so nothing is lost or doubled.
 * A disconnect the tab asked for (`socket.disconnect()`) is left alone. Returns the cleanup.
 */
export function keepConnected(s: Socket, delay: (attempt: number) => number = reconnectDelay): () => void {
  let attempt = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const retry = (atLeastMs = 0) => {
    if (timer) return;
    timer = setTimeout(
      () => {
        timer = undefined;
        if (!s.connected) s.connect();
      },
      Math.max(delay(attempt++), atLeastMs),
    );
  };
  const onDisconnect = (reason: string) => {
    if (reason === 'io server disconnect') retry();
  };
  // A handshake refused as rate limited is tried again after the wait it was given.
  const onConnectError = (
    err?: Error & { data?: { code?: string; details?: { retryAfterSeconds?: number } } },
  ) => {
    const wait = err?.data?.code === 'rate_limited' ? (err.data.details?.retryAfterSeconds ?? 0) * 1000 : 0;
    if (!s.active) retry(wait);
  };
  const onConnect = () => {
    attempt = 0;
  };
  s.on('disconnect', onDisconnect);
  s.on('connect_error', onConnectError);
  s.on('connect', onConnect);
  return () => {
    clearTimeout(timer);
    s.off('disconnect', onDisconnect);
    s.off('connect_error', onConnectError);
    s.off('connect', onConnect);
  };
}

/** A `/live` socket that stays connected across server restarts (see keepConnected). */
export function createLiveSocket(url = '/live'): Socket {
  const s = io(url, {
    withCredentials: true,
    transports: ['websocket', 'polling'],
    reconnectionDelayMax: 5000,
  });
  keepConnected(s);
  return s;
}

export function liveSocket(): Socket {
  if (!socket) socket = createLiveSocket();
  return socket;
}

/** After sign-in or sign-out the handshake must be redone with the new cookie. */
export function resetLive(): void {
  if (socket) {
    socket.disconnect();
    socket.connect();
  }
}

type Handler<K extends keyof LiveServerEvents> = (payload: LiveServerEvents[K]) => void;

/** Subscribes to a server event, parsing each payload with its libs schema; returns the unsubscribe. */
export function onLive<K extends keyof LiveServerEvents>(event: K, handler: Handler<K>): () => void {
  const s = liveSocket();
  const schema = LiveServerToClient[event];
  const listener = (raw: unknown) => {
    const parsed = schema.safeParse(raw);
    if (parsed.success) handler(parsed.data as LiveServerEvents[K]);
    else console.warn(`[live] ignored a malformed ${event} event`, parsed.error.issues[0]);
  };
  s.on(event as string, listener);
  return () => {
    s.off(event as string, listener);
  };
}

/** Emits a join with an ack, with a timeout so a dead connection does not hang the page. */
export function emitJoin(event: string, payload: unknown, timeoutMs = 10_000): Promise<JoinAck> {
  const s = liveSocket();
  return new Promise((resolve) => {
    s.timeout(timeoutMs).emit(event, payload, (err: Error | null, ack: unknown) => {
      if (err) return resolve(refusal('timeout', 'The live connection did not answer; retrying.'));
      const parsed = JoinAck.safeParse(ack);
      resolve(parsed.success ? parsed.data : refusal('bad_ack', 'The hub sent an unexpected answer.'));
    });
  });
}

/** Calls `join` now if connected and on every reconnect; returns the cleanup. */
export function onConnected(join: () => void): () => void {
  const s = liveSocket();
  if (s.connected) join();
  s.on('connect', join);
  return () => {
    s.off('connect', join);
  };
}

/** The tab's `/live` socket and the REST API as the transport of a run follower (`RunFollower` in libs). */
export function runFollowerTransport(): RunFollowerTransport {
  return socketRunTransport(liveSocket(), {
    logs: (runId, after, limit) => api<LogsPage>(`/api/runs/${runId}/logs?after=${after}&limit=${limit}`),
    run: (runId) => api<RunView>(`/api/runs/${runId}`),
  });
}
