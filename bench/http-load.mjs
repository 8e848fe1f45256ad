#!/usr/bin/env node
// The bench's HTTP load generator, run in its own process so it does not share an event loop with
// whatever spawned it: CONNECTIONS keep-alive clients, each sending GETs back to back (the next path
// of PATHS, round-robin) for SECONDS after a one-second warm-up; with `bases` (several servers, e.g.
// API replicas) the clients are split between them. Prints one JSON line:
// {requests, all (warm-up and drain included), seconds, perSecond, p50, p99, max, statuses}. Usage:
//   node bench/http-load.mjs '{"base":"http://127.0.0.1:3000","paths":["/api/benchmarks"],
//                              "connections":200,"seconds":10,"headers":{}}'
import http from 'node:http';

const {
  base,
  bases = [base],
  paths,
  connections = 200,
  seconds = 10,
  headers = {},
} = JSON.parse(process.argv[2]);
const urls = bases.map((b) => new URL(b));
const agent = new http.Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections });
const lat = [];
const statuses = {};
let measuring = false;
let stop = false;
let next = 0;
/** Every response, the warm-up and the drain included (to divide a server's CPU time by). */
let all = 0;

const get = (url, path) =>
  new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const req = http.request(
      { host: url.hostname, port: url.port, path, method: 'GET', agent, headers },
      (res) => {
        res.on('data', () => {});
        res.on('end', () => {
          all++;
          if (measuring) {
            lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
            statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
          }
          resolve();
        });
      },
    );
    req.on('error', () => {
      if (measuring) statuses.error = (statuses.error ?? 0) + 1;
      resolve();
    });
    req.end();
  });

const client = async (_, i) => {
  const url = urls[i % urls.length];
  while (!stop) await get(url, paths[next++ % paths.length]);
};
const clients = Array.from({ length: connections }, client);
await new Promise((r) => setTimeout(r, 1000));
measuring = true;
const started = process.hrtime.bigint();
await new Promise((r) => setTimeout(r, seconds * 1000));
measuring = false;
const took = Number(process.hrtime.bigint() - started) / 1e9;
stop = true;
await Promise.all(clients);
agent.destroy();
const s = Float64Array.from(lat).sort();
const pct = (p) => (s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN);
console.log(
  JSON.stringify({
    requests: s.length,
    all,
    seconds: took,
    perSecond: s.length / took,
    p50: pct(50),
    p99: pct(99),
    max: s.length ? s[s.length - 1] : NaN,
    statuses,
  }),
);
