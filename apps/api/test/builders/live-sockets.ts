import type { LiveNamespace, LiveSocket } from '../../src/socket/socket-server';

/** What a fake socket or room was sent: the event and its payload, in order. */
export type Sent = { to: string | null; event: string; payload: unknown; socket?: string };

/**
 * A `/live` namespace in memory: sockets with rooms, and every emit recorded (`sent`) with the room
 * it went to (null: the socket named by `socket`), and `send` for what a client sends. Enough for the live parts' unit specs, no socket.io server.
 */
export function fakeLive() {
  const sent: Sent[] = [];
  const sockets = new Map<string, LiveSocket>();
  const rooms = new Map<string, Set<string>>();
  let n = 0;
  const socket = (data: Record<string, unknown> = {}): LiveSocket => {
    const id = `s${++n}`;
    const own = new Set<string>([id]);
    const listeners = new Map<string, (...args: unknown[]) => void>();
    const any: ((event: string, ...args: unknown[]) => void)[] = [];
    const s = {
      listeners,
      any,
      on: (event: string, listener: (...args: unknown[]) => void) => {
        listeners.set(event, listener);
        return s;
      },
      onAny: (listener: (event: string, ...args: unknown[]) => void) => {
        any.push(listener);
        return s;
      },
      id,
      data,
      connected: true,
      rooms: own,
      handshake: { auth: {}, headers: {} },
      emit: (event: string, payload: unknown) => {
        sent.push({ to: null, socket: id, event, payload });
        return true;
      },
      join: async (room: string) => {
        own.add(room);
        if (!rooms.has(room)) rooms.set(room, new Set());
        rooms.get(room)!.add(id);
      },
      leave: async (room: string) => {
        own.delete(room);
        rooms.get(room)?.delete(id);
      },
    };
    sockets.set(id, s as unknown as LiveSocket);
    return s as unknown as LiveSocket;
  };
  const nsp = {
    sockets,
    use: () => undefined,
    on: () => undefined,
    adapter: { rooms },
    to: (room: string) => ({
      emit: (event: string, payload: unknown) => {
        sent.push({ to: room, event, payload });
        return true;
      },
    }),
    emit: (event: string, payload: unknown) => {
      sent.push({ to: '*', event, payload });
      return true;
    },
  } as unknown as LiveNamespace;
  /** What a client sends: every catch-all listener sees it, then the event's own; resolves with the ack. */
  const send = (to: LiveSocket, event: string, ...args: unknown[]): Promise<unknown> =>
    new Promise((resolve) => {
      const s = to as unknown as {
        listeners: Map<string, (...args: unknown[]) => void>;
        any: ((event: string, ...args: unknown[]) => void)[];
      };
      const all = [...args, resolve];
      for (const l of s.any) l(event, ...all);
      s.listeners.get(event)?.(...all);
    });
  return { nsp, socket, sent, send };
}
