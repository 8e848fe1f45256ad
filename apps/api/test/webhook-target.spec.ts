import { describe, expect, it } from 'vitest';
import { privateAddress, webhookTargetProblem } from '../src/notifications/webhook-target';

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
});
