import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  guardedLookup,
  postWebhook,
  privateAddress,
  v6Bytes,
  webhookTargetProblem,
} from '../src/notifications/webhook-target';

describe('where an outgoing webhook may post', () => {
  it('knows private, loopback, link-local, shared, multicast and mapped addresses', () => {
    for (const ip of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fd12::1',
      'fe80::1',
      '::ffff:127.0.0.1',
    ])
      expect(privateAddress(ip), ip).toBe(true);
    for (const ip of ['8.8.8.8', '172.32.0.1', '100.128.0.1', '2001:4860:4860::8888', '::ffff:1.1.1.1'])
      expect(privateAddress(ip), ip).toBe(false);
  });

  it('says why a URL is refused, and lets everything through when private targets are allowed', async () => {
    expect(await webhookTargetProblem('ftp://example.com/x', false)).toMatch(/not an http\(s\) URL/);
    expect(await webhookTargetProblem('http://127.0.0.1:9/x', false)).toMatch(
      /private or local address \(127\.0\.0\.1\)/,
    );
    expect(await webhookTargetProblem('http://8.8.8.8/hook', false)).toBeNull();
    expect(await webhookTargetProblem('http://127.0.0.1:9/x', true)).toBeNull();
  });

  it('judges IPv6 on its parsed value: every spelling of an inside address is refused', () => {
    for (const ip of [
      // IPv4-mapped loopback, however it is written (the URL parser writes the second form)
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '0:0:0:0:0:ffff:127.0.0.1',
      '0:0:0:0:0:ffff:7f00:0001',
      '::FFFF:7F00:1',
      // IPv4-mapped private and metadata addresses
      '::ffff:10.0.0.1',
      '::ffff:a00:1',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '::ffff:192.168.0.1',
      // IPv4-translated and IPv4-compatible forms
      '::ffff:0:127.0.0.1',
      '::127.0.0.1',
      '::7f00:1',
      // loopback and unspecified, long forms
      '0:0:0:0:0:0:0:1',
      '0000:0000:0000:0000:0000:0000:0000:0001',
      '0:0:0:0:0:0:0:0',
      // unique local fc00::/7 (AWS's metadata fd00:ec2::254 too) and link-local fe80::/10
      'fc00::1',
      'fdff:ffff::1',
      'fd00:ec2::254',
      'fe80::1',
      'fe80::1%eth0',
      'febf:ffff::1',
      'fec0::1',
      'ff02::1',
      // NAT64 of private v4, and the local-use NAT64 prefix
      '64:ff9b::10.0.0.1',
      '64:ff9b::7f00:1',
      '64:ff9b::a9fe:a9fe',
      '64:ff9b:1::8.8.8.8',
      // 6to4 embedding private v4
      '2002:7f00:1::',
      '2002:a00:1::1',
      '2002:a9fe:a9fe::1',
      '2002:c0a8:101::1',
      // Teredo whose client is loopback (inverted bits), documentation, discard
      '2001:0:4136:e378:8000:63bf:80ff:fffe',
      '2001:db8::1',
      '100::1',
      // not an address at all
      'not-an-ip',
    ])
      expect(privateAddress(ip), ip).toBe(true);
    for (const ip of [
      '::ffff:8.8.8.8',
      '::ffff:808:808',
      '64:ff9b::8.8.8.8',
      '2002:808:808::1',
      '2606:4700:4700::1111',
      '2001:4860:4860::8888',
      'fbff::1',
      'fe7f::1',
    ])
      expect(privateAddress(ip), ip).toBe(false);
  });

  it('reads IPv6 into its 16 bytes', () => {
    expect(v6Bytes('::1')).toEqual([...new Array(15).fill(0), 1]);
    expect(v6Bytes('::ffff:127.0.0.1')).toEqual(v6Bytes('::ffff:7f00:1'));
    expect(v6Bytes('0:0:0:0:0:ffff:127.0.0.1')).toEqual(v6Bytes('::ffff:7f00:1'));
    expect(v6Bytes('1::2:1.2.3.4')).toEqual([0, 1, ...new Array(8).fill(0), 0, 2, 1, 2, 3, 4]);
    expect(v6Bytes('127.0.0.1')).toBeNull();
    expect(v6Bytes('1::2::3')).toBeNull();
  });

  it('refuses every bracketed IPv6 form of an inside address in a URL, at registration', async () => {
    for (const host of [
      '[::ffff:127.0.0.1]',
      '[::ffff:7f00:1]',
      '[0:0:0:0:0:ffff:127.0.0.1]',
      '[::ffff:10.0.0.1]',
      '[::ffff:169.254.169.254]',
      '[::1]',
      '[fc00::1]',
      '[fe80::1]',
      '[64:ff9b::a00:1]',
      '[2002:7f00:1::1]',
    ])
      expect(await webhookTargetProblem(`http://${host}:8080/hook`, false), host).toMatch(
        /private or local address/,
      );
    expect(await webhookTargetProblem('http://[2606:4700:4700::1111]/hook', false)).toBeNull();
    // Numeric spellings of IPv4 are normalized by the URL parser before the check.
    expect(await webhookTargetProblem('http://2130706433/hook', false)).toMatch(/127\.0\.0\.1/);
    expect(await webhookTargetProblem('http://0x7f.1/hook', false)).toMatch(/127\.0\.0\.1/);
    expect(await webhookTargetProblem('http://localhost:9/hook', false)).toMatch(/private or local address/);
  });

  it('checks the DNS answer again at connect time (the lookup node:http connects with)', async () => {
    const resolve = (host: string, all: boolean) =>
      new Promise<{ err: NodeJS.ErrnoException | null; address: unknown }>((r) =>
        guardedLookup(host, { all }, (err, address) => r({ err, address })),
      );
    const local = await resolve('localhost', false);
    expect(local.err?.code).toBe('EPRIVATEADDRESS');
    expect(local.err?.message).toMatch(/localhost is a private or local address/);
    expect((await resolve('localhost', true)).err?.code).toBe('EPRIVATEADDRESS');
  });

  it('never connects to a name whose DNS answer is inside, however it was checked before', async () => {
    let received = 0;
    const server = createServer((_req, res) => {
      received++;
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const post = (allowPrivate: boolean) =>
        postWebhook(`http://localhost:${port}/hook`, {
          headers: {},
          body: '{}',
          timeoutMs: 5000,
          allowPrivate,
        });
      await expect(post(false)).rejects.toMatchObject({ code: 'EPRIVATEADDRESS' });
      expect(received).toBe(0);
      // Allowed (a closed event on its own network): the same post goes through.
      expect(await post(true)).toBe(204);
      expect(received).toBe(1);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
