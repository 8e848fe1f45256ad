import { describe, expect, it } from 'vitest';
import { AgentConnections } from '../src/agents/agent-connections';
import { RunSweeper } from '../src/runs/run-sweeper.service';
import type { RunQueue } from '../src/runs/run-queue';
import { Clock } from '../src/common/clock';
import type { Config } from '../src/config/config';
import type { RunLifecycleService } from '../src/runs/run-lifecycle.service';

/** The sweeper with recording stand-ins for its repository and lifecycle (mocked repositories, unit tier). */
function sweeper(expired: { id: string; agentId: string; leaseExpiresAt?: Date }[] = []) {
  const calls: string[] = [];
  const reasons: string[] = [];
  const renewedUntil: Date[] = [];
  const repo = {
    extendLeases: async (until: Date) => (calls.push(`extend ${until.getTime() - Date.now() > 8_000}`), 2),
    expiredLeases: async () => (calls.push('expired?'), expired),
    overdue: async () => (calls.push('overdue?'), []),
  } as unknown as RunQueue;
  const lifecycle = {
    failForLostLease: async (id: string, _a: string, reason: string) => (
      calls.push(`fail ${id}`),
      reasons.push(reason),
      true
    ),
    renewLeases: async (_a: string, ids: string[], until: Date) => (
      calls.push(`renew ${ids.join()}`),
      void renewedUntil.push(until)
    ),
  } as unknown as RunLifecycleService;
  const connections = new AgentConnections();
  const config = { AGENT_LEASE_SECONDS: 3, DEADLINE_GRACE_SECONDS: 1 } as Config;
  const s = new RunSweeper(repo, lifecycle, connections, new Clock(), config);
  // Past the boot grace (a lease plus the reconnect backoff).
  (s as unknown as { bootedAt: number }).bootedAt = Date.now() - 60_000;
  const setLast = (monoAgo: number, wallAgo: number) =>
    ((s as unknown as { lastTick: { mono: number; wall: number } }).lastTick = {
      mono: performance.now() - monoAgo,
      wall: Date.now() - wallAgo,
    });
  return { s, calls, reasons, renewedUntil, connections, setLast };
}

describe('RunSweeper', () => {
  it('judges expired leases on an ordinary tick', async () => {
    const { s, calls, setLast } = sweeper([{ id: 'r1', agentId: 'a1' }]);
    setLast(750, 750);
    await s.tick();
    expect(calls).toEqual(['expired?', 'fail r1', 'overdue?']);
  });

  it('after its own pause gives every lease a fresh window (lease + reconnect backoff) instead of judging', async () => {
    const { s, calls, setLast } = sweeper([{ id: 'r1', agentId: 'a1' }]);
    setLast(7_000, 7_000);
    await s.tick();
    expect(calls).toEqual(['extend true']);
    // Deadlines wait for the window too; leases (now fresh) are judged again from the next tick.
    setLast(750, 750);
    calls.length = 0;
    await s.tick();
    expect(calls).toEqual(['expired?', 'fail r1']);
  });

  it('treats a jump of the wall clock like a pause', async () => {
    const { s, calls, setLast } = sweeper([{ id: 'r1', agentId: 'a1' }]);
    setLast(750, 60_750);
    await s.tick();
    expect(calls).toEqual(['extend true']);
  });

  it('renews rather than fails a run its agent named in a message received within the lease', async () => {
    const { s, calls, connections, setLast } = sweeper([
      { id: 'r1', agentId: 'a1' },
      { id: 'r2', agentId: 'a2' },
    ]);
    connections.heardOf('a1', ['r1']);
    connections.heardOf('a9', ['r2']); // another agent naming r2 proves nothing about a2
    setLast(750, 750);
    await s.tick();
    expect(calls).toEqual(['expired?', 'renew r1', 'fail r2', 'overdue?']);
  });

  it('a run its agent last named 2.5 s ago is renewed until that message plus the lease, not a whole lease from now', async () => {
    const { s, calls, renewedUntil, connections, setLast } = sweeper([{ id: 'r1', agentId: 'a1' }]);
    connections.heardOf('a1', ['r1']);
    // The message came 2.5 s ago (a batch after the last heartbeat: batches renew no lease).
    (connections as unknown as { heard: Map<string, { agentId: string; at: number }> }).heard.set('r1', {
      agentId: 'a1',
      at: performance.now() - 2_500,
    });
    setLast(750, 750);
    const before = Date.now();
    await s.tick();
    expect(calls).toEqual(['expired?', 'renew r1', 'overdue?']);
    // 3 s lease from the message: about 0.5 s from now (a dead agent fails one lease after its last word).
    const leftMs = renewedUntil[0].getTime() - before;
    expect(leftMs).toBeGreaterThan(300);
    expect(leftMs).toBeLessThan(1_000);
  });

  it('the failure says how long the agent was actually silent, and the lease', async () => {
    const { s, reasons, connections, setLast } = sweeper([
      { id: 'r1', agentId: 'a1', leaseExpiresAt: new Date(Date.now() - 400) },
      { id: 'r2', agentId: 'a2', leaseExpiresAt: new Date(Date.now() - 1_200) },
    ]);
    (connections as unknown as { heard: Map<string, { agentId: string; at: number }> }).heard.set('r1', {
      agentId: 'a1',
      at: performance.now() - 3_600,
    });
    setLast(750, 750);
    await s.tick();
    // r1: heard 3.6 s ago on this replica; r2: never heard here, its lease (renewed 3 s before it ended) ran out 1.2 s ago.
    expect(reasons[0]).toMatch(/^nothing heard from the agent for 3\.[5-7] s \(the lease is 3 s\)$/);
    expect(reasons[1]).toMatch(/^nothing heard from the agent for 4\.[1-3] s \(the lease is 3 s\)$/);
  });
});
