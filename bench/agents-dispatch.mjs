#!/usr/bin/env node
// `/agents` run.batch handling, Nest gateway against hand-wired, in one process: the part of a batch's
// path that issue 32 item 3 changes (from the socket's event to the handler's ack), without the
// network and without the database. Not a test: it prints a table.
//
// The Nest side is this tree's AgentsGateway (apps/api/dist) in a real Nest application on
// HubIoAdapter: Nest's context creator, ZodPayloadPipe with parseRunBatch, AgentsAckFilter. The
// hand-wired side is another build's AgentsGateway (BENCH_HAND_WIRED_DIST: an apps/api/dist from
// before the port, e.g. 6ab78bf's), whose `onConnection` wires socket.on + onAcked with the same
// parser. Both get the same fake socket and the same lifecycle stub (storeBatch answers at once), so
// what differs is the dispatch alone; parsing the batch is in both.
//
// Settings (env): BENCH_HAND_WIRED_DIST (required), BENCH_ROUNDS (8; the order alternates every
// round), BENCH_BATCHES (2000 per side per round and batch size; fewer for the larger batches),
// BENCH_SIZES (lines per batch, "1,50,500,5000"), BENCH_WINDOW (batches in flight: 1 = each waits for
// its ack), BENCH_CHUNK (50: batches sent on one side before the other side's turn).
//
//   npm run build && BENCH_HAND_WIRED_DIST=/path/to/old/apps/api/dist node bench/agents-dispatch.mjs
import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const newDist = path.join(here, '..', 'apps', 'api', 'dist');
const oldDist = process.env.BENCH_HAND_WIRED_DIST;
if (!oldDist) {
  console.error('BENCH_HAND_WIRED_DIST: the apps/api/dist of a build from before the port');
  process.exit(2);
}
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 2000);
const SIZES = (process.env.BENCH_SIZES ?? '1,50,500,5000').split(',').map(Number);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 1);
const CHUNK = Number(process.env.BENCH_CHUNK ?? 50);

require('reflect-metadata');
const { Module, Logger } = require('@nestjs/common');
const { NestFactory } = require('@nestjs/core');
Logger.overrideLogger(false);

/** What both gateways are built with: the lifecycle answers every batch at once. */
function collaborators(dist) {
  const { AgentConnections } = require(path.join(dist, 'agents', 'agent-connections.js'));
  const { EventBus } = require(path.join(dist, 'common', 'event-bus.js'));
  return {
    sockets: { takeOver: () => undefined, nsp: { use: () => undefined, on: () => undefined } },
    agents: { markDisconnected: async () => undefined },
    connections: new AgentConnections(),
    lifecycle: { storeBatch: async (_runId, _agentId, batch) => ({ ok: true, ackedSeq: batch.seq }) },
    dispatcher: { kick: () => undefined },
    bus: new EventBus(),
    limiter: { socketAttempt: async () => undefined },
    config: { AGENT_LEASE_SECONDS: 30 },
  };
}

function fakeSocket() {
  const socket = new EventEmitter();
  socket.setMaxListeners(0);
  Object.assign(socket, {
    id: 'bench-socket',
    data: { agentId: 'a1', agentName: 'bench' },
    handshake: { auth: {}, headers: {} },
    onAny: () => undefined,
    join: async () => undefined,
  });
  return socket;
}

/** The hand-wired gateway: its own onConnection puts the listeners on the socket. */
function handWired() {
  const { AgentsGateway } = require(path.join(oldDist, 'agents', 'agents.gateway.js'));
  const c = collaborators(oldDist);
  const gateway = new AgentsGateway(
    c.sockets,
    c.agents,
    c.connections,
    c.lifecycle,
    c.dispatcher,
    c.bus,
    c.limiter,
    c.config,
  );
  const socket = fakeSocket();
  gateway.onConnection(socket);
  return socket;
}

/** The Nest gateway in a Nest application on HubIoAdapter; the connection is Nest's own handler. */
async function nest() {
  const { AgentsGateway } = require(path.join(newDist, 'agents', 'agents.gateway.js'));
  const { AgentSockets } = require(path.join(newDist, 'agents', 'agent-sockets.js'));
  const { AgentsService } = require(path.join(newDist, 'agents', 'agents.service.js'));
  const { AgentConnections } = require(path.join(newDist, 'agents', 'agent-connections.js'));
  const { Dispatcher } = require(path.join(newDist, 'agents', 'dispatcher.service.js'));
  const { RunLifecycleService } = require(path.join(newDist, 'runs', 'run-lifecycle.service.js'));
  const { EventBus } = require(path.join(newDist, 'common', 'event-bus.js'));
  const { RateLimiter } = require(path.join(newDist, 'rate-limits', 'rate-limiter.js'));
  const { CONFIG } = require(path.join(newDist, 'config', 'config.js'));
  const { HubIoAdapter } = require(path.join(newDist, 'socket', 'hub-io-adapter.js'));
  const c = collaborators(newDist);
  class BenchModule {}
  Module({
    providers: [
      AgentsGateway,
      { provide: AgentSockets, useValue: c.sockets },
      { provide: AgentsService, useValue: c.agents },
      { provide: AgentConnections, useValue: c.connections },
      { provide: RunLifecycleService, useValue: c.lifecycle },
      { provide: Dispatcher, useValue: c.dispatcher },
      { provide: EventBus, useValue: c.bus },
      { provide: RateLimiter, useValue: c.limiter },
      { provide: CONFIG, useValue: c.config },
    ],
  })(BenchModule);
  let onConnection;
  class CapturingAdapter extends HubIoAdapter {
    bindClientConnect(server, callback) {
      if (server.name === '/agents') onConnection = callback;
    }
  }
  const app = await NestFactory.create(BenchModule, { logger: false });
  app.useWebSocketAdapter(
    new CapturingAdapter(app, { REDIS_URL: '' }, { attach: () => undefined, useRedis: () => undefined }),
  );
  await app.init();
  const socket = fakeSocket();
  onConnection(socket);
  return { socket, close: () => app.close() };
}

/** `count` run.batch events of `size` lines each, as socket.io hands them over (decoded objects). */
function batches(count, size) {
  const runId = randomUUID();
  const out = [];
  let n = 0;
  for (let seq = 1; seq <= count; seq++) {
    const entries = [];
    for (let i = 0; i < size; i++)
      entries.push({ type: 'log', n: ++n, ts: Date.now(), stream: 'out', text: `tick ${n} of the bench` });
    out.push({ runId, seq, entries });
  }
  return out;
}

/**
 * Sends every batch with an ack, WINDOW at a time: the process's CPU time per batch in µs (user +
 * system: on a shared box, time this process was not running is not counted) and the wall time.
 */
async function drive(socket, payloads) {
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  let next = 0;
  const lane = async () => {
    while (next < payloads.length) {
      const p = payloads[next++];
      const ack = await new Promise((resolve) => socket.emit('run.batch', p, resolve));
      if (!ack.ok) throw new Error(`refused: ${JSON.stringify(ack)}`);
    }
  };
  await Promise.all(Array.from({ length: WINDOW }, lane));
  const used = process.cpuUsage(cpu);
  const wall = Number(process.hrtime.bigint() - started) / 1000 / payloads.length;
  // Uncounted: a turn of the event loop, for what the handlers left to setImmediate (trace ends).
  await new Promise((resolve) => setImmediate(resolve));
  return { cpu: (used.user + used.system) / payloads.length, wall };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const hand = handWired();
const nested = await nest();
const sides = { 'hand-wired': hand, nest: nested.socket };
console.log(
  `agents-dispatch: ${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}, Node ${process.version}, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}; ${ROUNDS} rounds × ${BATCHES} batches, window ${WINDOW}`,
);
const rows = [];
for (const size of SIZES) {
  const count = Math.max(50, Math.round(size >= 500 ? BATCHES / (size / 100) : BATCHES));
  const payloads = batches(count, size);
  // Warm both paths (JIT, the parser's shapes) before anything is counted.
  for (const socket of Object.values(sides)) await drive(socket, payloads.slice(0, Math.min(200, count)));
  // Each round: the batches cut in chunks, sent hand-wired, Nest, Nest, hand-wired, ... (ABBA), so
  // that the box's drift falls on both sides alike; a round's ratio is its CPU time, Nest ÷ hand-wired.
  const chunks = [];
  for (let i = 0; i < payloads.length; i += CHUNK) chunks.push(payloads.slice(i, i + CHUNK));
  const cpu = { 'hand-wired': [], nest: [] };
  const wall = { 'hand-wired': [], nest: [] };
  const ratios = [];
  const wallRatios = [];
  for (let r = 0; r < ROUNDS; r++) {
    const sum = { 'hand-wired': { cpu: 0, wall: 0 }, nest: { cpu: 0, wall: 0 } };
    for (let i = 0; i < chunks.length; i++) {
      const order = (i + r) % 2 ? ['nest', 'hand-wired'] : ['hand-wired', 'nest'];
      for (const side of order) {
        const t = await drive(sides[side], chunks[i]);
        sum[side].cpu += t.cpu / chunks.length;
        sum[side].wall += t.wall / chunks.length;
      }
    }
    for (const side of ['hand-wired', 'nest']) {
      cpu[side].push(sum[side].cpu);
      wall[side].push(sum[side].wall);
    }
    ratios.push(sum.nest.cpu / sum['hand-wired'].cpu);
    wallRatios.push(sum.nest.wall / sum['hand-wired'].wall);
  }
  const row = {
    size,
    count,
    hand: median(cpu['hand-wired']),
    nest: median(cpu.nest),
    ratio: median(ratios),
    min: Math.min(...ratios),
    max: Math.max(...ratios),
    wallRatio: median(wallRatios),
  };
  rows.push(row);
  console.log(
    `lines/batch ${String(size).padStart(5)} (${count} batches): CPU hand-wired ${row.hand.toFixed(1)} µs, nest ${row.nest.toFixed(1)} µs per batch; nest ÷ hand-wired median ${row.ratio.toFixed(3)} (rounds ${row.min.toFixed(3)}–${row.max.toFixed(3)}), wall ratio ${row.wallRatio.toFixed(3)}`,
  );
}
console.log(
  '\n| lines per batch | hand-wired CPU µs/batch | Nest CPU µs/batch | Nest ÷ hand-wired, CPU (median of rounds, range) | wall ratio (median) | added CPU µs/batch |',
);
console.log('| --- | --- | --- | --- | --- | --- |');
for (const r of rows)
  console.log(
    `| ${r.size} | ${r.hand.toFixed(1)} | ${r.nest.toFixed(1)} | ${r.ratio.toFixed(3)} (${r.min.toFixed(3)}–${r.max.toFixed(3)}) | ${r.wallRatio.toFixed(3)} | ${(r.nest - r.hand).toFixed(1)} |`,
  );
await nested.close();
process.exit(0);
