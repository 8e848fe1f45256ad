import type { createClient } from 'redis';

type RedisClient = Pick<ReturnType<typeof createClient>, 'isOpen' | 'isReady' | 'close' | 'destroy'>;

/**
 * Closes a Redis client at shutdown without waiting on Redis. A graceful close (QUIT) waits for its
 * pending commands, and while the client is reconnecting that means waiting for a Redis that may
 * never come back: the hub's shutdown hung there. A client that is not ready is destroyed at once;
 * a ready one gets `graceMs` to finish, then is destroyed.
 */
export async function closeRedisClient(client: RedisClient | undefined, graceMs = 2_000): Promise<void> {
  if (!client?.isOpen) return;
  if (!client.isReady) {
    destroyQuietly(client);
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), graceMs);
    timer.unref();
  });
  const outcome = await Promise.race([
    client.close().then(
      () => 'closed' as const,
      () => 'failed' as const,
    ),
    late,
  ]);
  clearTimeout(timer);
  if (outcome !== 'closed') destroyQuietly(client);
}

function destroyQuietly(client: RedisClient): void {
  try {
    client.destroy();
  } catch {
    // already closed
  }
}
