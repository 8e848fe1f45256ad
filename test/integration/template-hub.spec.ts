import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTar } from '@dryft/libs';
import { startTestHub, type TestHub } from '../support/hub';

/**
 * "The CLI already knows the event server" (issue 31): the template a hub hands out names that hub
 * in its dryft.json: PUBLIC_URL where the operator set it, whatever address the request came to;
 * without PUBLIC_URL (development), the address the request came to, on any port and by any name.
 */
async function templateHub(hub: TestHub, host?: string): Promise<string> {
  const req = hub.http.get('/api/benchmarks/toy-decode/template').buffer(true);
  if (host) req.set('Host', host);
  const res = await req.parse((r, done) => {
    const chunks: Buffer[] = [];
    r.on('data', (c: Buffer) => chunks.push(c));
    r.on('end', () => done(null, Buffer.concat(chunks)));
  });
  expect(res.status).toBe(200);
  let hubUrl: string | undefined;
  readTar(gunzipSync(res.body as Buffer), (e) => {
    if (e.type === 'file' && e.name.endsWith('/dryft.json'))
      hubUrl = JSON.parse(Buffer.from(e.content).toString('utf8')).hub;
  });
  return hubUrl ?? '(no dryft.json)';
}

describe('the template names its hub', () => {
  let withPublicUrl: TestHub;
  let development: TestHub;

  beforeAll(async () => {
    withPublicUrl = await startTestHub({ env: { PUBLIC_URL: 'https://hub.example.org/' } });
    development = await startTestHub();
  });
  afterAll(async () => {
    await withPublicUrl?.close();
    await development?.close();
  });

  it('PUBLIC_URL where it is set, whatever address the request came to', async () => {
    expect(await templateHub(withPublicUrl)).toBe('https://hub.example.org');
    expect(await templateHub(withPublicUrl, 'dev-box.local:4567')).toBe('https://hub.example.org');
  });

  it('without PUBLIC_URL, the address the request came to', async () => {
    expect(await templateHub(development, 'dev-box.local:4567')).toBe('http://dev-box.local:4567');
    expect(await templateHub(development, '127.0.0.1:5123')).toBe('http://127.0.0.1:5123');
  });
});
