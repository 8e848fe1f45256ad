#!/usr/bin/env node
// The baseline for public REST reads: a bare Node HTTP server answering GETs with bytes already in
// memory (the same JSON, ETag and Cache-Control that the API sent for each path), 304 on a matching
// If-None-Match, 404 otherwise. No framework, no database. Usage: PORT=… node bench/bare-http.mjs FILE
// where FILE holds {"<path>": {"body": "<json>", "etag": "\"…\""}}.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';

const pages = new Map(
  Object.entries(JSON.parse(readFileSync(process.argv[2], 'utf8'))).map(([p, { body, etag }]) => [
    p,
    { body: Buffer.from(body), etag },
  ]),
);
createServer((req, res) => {
  const page = pages.get(req.url);
  if (!page) {
    res.statusCode = 404;
    res.end();
    return;
  }
  res.setHeader('ETag', page.etag);
  res.setHeader('Cache-Control', 'public, max-age=10');
  if (req.headers['if-none-match'] === page.etag) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', page.body.length);
  res.end(page.body);
}).listen(Number(process.env.PORT), '127.0.0.1');
