#!/usr/bin/env node
// The baseline the bench compares against: a bare socket.io relay with no database, no
// authentication and no validation. Same shapes as Dryft's sockets so the clients are the same.
//   /agents: 'run.batch' (ack) -> broadcast 'run.log' to room run:<id>; 'agent.ready' marks it idle
//   /live:   'run.join' / 'leaderboard.join' (ack) join rooms
//   /ctl:    'assign.template' (an assignment the hub made, so the relay sends the same shape);
//            'queue' -> 'run.assign' to an idle agent; 'board' -> 'leaderboard.update' to the room
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const { Server } = require('socket.io');

const http = createServer();
const io = new Server(http, { serveClient: false, maxHttpBufferSize: 8 * 1024 * 1024 });
const idle = [];
let seq = 0;
let template = {};
io.of('/agents').on('connection', (s) => {
  s.on('agent.ready', (_p, ack) => {
    idle.push(s);
    ack?.({ ok: true, runs: [] });
  });
  s.on('run.batch', (b, ack) => {
    const lines = b.entries.map((e) => ({ seq: e.n, ts: e.ts, stream: e.stream, text: e.text }));
    io.of('/live').to(`run:${b.runId}`).emit('run.log', { runId: b.runId, lines });
    ack?.({ ok: true, ackedSeq: b.seq });
  });
  s.on('run.finished', (_f, ack) => {
    idle.push(s);
    ack?.({ ok: true });
  });
});
io.of('/live').on('connection', (s) => {
  s.on('run.join', (p, ack) => {
    s.join(`run:${p.runId}`);
    ack?.({ ok: true });
  });
  s.on('leaderboard.join', (p, ack) => {
    s.join(`leaderboard:${p.benchmarkId}`);
    ack?.({ ok: true });
  });
});
io.of('/ctl').on('connection', (s) => {
  s.on('assign.template', (a, ack) => {
    template = a;
    ack?.({ ok: true });
  });
  s.on('queue', (p, ack) => {
    let agent = idle.shift();
    while (agent && !agent.connected) agent = idle.shift();
    if (agent) agent.emit('run.assign', { ...template, runId: p.runId ?? `relay-${++seq}` }, () => undefined);
    ack?.({ ok: Boolean(agent) });
  });
  s.on('board', (p, ack) => {
    io.of('/live')
      .to(`leaderboard:${p.benchmarkId}`)
      .emit('leaderboard.update', { leaderboard: { benchmarkId: p.benchmarkId, entries: [] } });
    ack?.({ ok: true });
  });
});
http.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`relay listening on ${http.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
