import { io, type Socket } from 'socket.io-client';
import { JoinAck, LiveServerToClient, type LiveServerEvents } from '@dryft/libs';

/**
 * One `/live` socket for the tab. The session cookie authenticates it at the handshake; signed-out
 * spectators connect without one and may join leaderboards only. Rooms are re-joined by the pages
 * on every (re)connect, since the server forgets them with the old connection.
 */
let socket: Socket | null = null;

export function liveSocket(): Socket {
  if (!socket) {
    socket = io('/live', {
      withCredentials: true,
      transports: ['websocket', 'polling'],
      reconnectionDelayMax: 5000,
    });
  }
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
      if (err)
        return resolve({
          ok: false,
          error: { code: 'timeout', message: 'The live connection did not answer; retrying.' },
        });
      const parsed = JoinAck.safeParse(ack);
      resolve(
        parsed.success
          ? parsed.data
          : { ok: false, error: { code: 'bad_ack', message: 'The hub sent an unexpected answer.' } },
      );
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
