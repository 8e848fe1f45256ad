import { normalizeIp } from '@nestjs/throttler';
import { BlockList, isIP } from 'node:net';

const isLoopback = (ip: string) => ip === '::1' || /^127\./.test(ip);

/** Addresses whose trust is remembered (cleared when full: the set a hub sees is a few proxies). */
const TRUST_MEMO_SIZE = 4096;

/** The names Express's "trust proxy" takes (proxy-addr), as subnets. */
const NAMED_SUBNETS: Record<string, [string, number, 'ipv4' | 'ipv6'][]> = {
  loopback: [
    ['127.0.0.0', 8, 'ipv4'],
    ['::1', 128, 'ipv6'],
  ],
  linklocal: [
    ['169.254.0.0', 16, 'ipv4'],
    ['fe80::', 10, 'ipv6'],
  ],
  uniquelocal: [
    ['10.0.0.0', 8, 'ipv4'],
    ['172.16.0.0', 12, 'ipv4'],
    ['192.168.0.0', 16, 'ipv4'],
    ['fc00::', 7, 'ipv6'],
  ],
};

/**
 * TRUST_PROXY (`loopback, uniquelocal, 203.0.113.0/24`) as a test of one address: the proxies whose
 * X-Forwarded-For is believed, the same list Express gets. Null when an entry is none of a name, an
 * address or a CIDR (the message says which).
 */
export function trustedProxies(setting: string): { trusted: (ip: string) => boolean } | { problem: string } {
  const list = new BlockList();
  for (const entry of setting
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const named = NAMED_SUBNETS[entry];
    if (named) {
      for (const [net, prefix, family] of named) list.addSubnet(net, prefix, family);
      continue;
    }
    const [address, bits] = entry.split('/');
    const family = isIP(address);
    const prefix = bits === undefined ? (family === 6 ? 128 : 32) : Number(bits);
    if (!family || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 6 ? 128 : 32)) {
      return {
        problem: `"${entry}" is not loopback, linklocal, uniquelocal, an IP address or a CIDR such as 10.0.0.0/8`,
      };
    }
    list.addSubnet(address, prefix, family === 6 ? 'ipv6' : 'ipv4');
  }
  // BlockList.check builds a SocketAddress per call (about 1 µs, a fifth of what a public read from
  // memory costs; bench/RESULTS.md): a proxy's few addresses are answered from a small memo.
  const memo = new Map<string, boolean>();
  return {
    trusted: (ip: string) => {
      const known = memo.get(ip);
      if (known !== undefined) return known;
      const family = isIP(ip);
      // Only addresses are remembered (at most 45 characters each), never a header's other text.
      if (family === 0) return false;
      const yes = list.check(ip, family === 6 ? 'ipv6' : 'ipv4');
      if (memo.size >= TRUST_MEMO_SIZE) memo.clear();
      memo.set(ip, yes);
      return yes;
    },
  };
}

const plain = (ip: string) => {
  const v = ip.trim();
  return v.startsWith('::ffff:') && isIP(v.slice(7)) === 4 ? v.slice(7) : v;
};

/**
 * The caller's address as Express sees it with `trust proxy` set to TRUST_PROXY (bootstrap.ts;
 * default loopback): the socket's address, or behind a trusted proxy the nearest `X-Forwarded-For`
 * hop that is not a trusted proxy;
 * IPv6 addresses grouped by /64 (one host usually holds a whole /64). For the requests that never
 * reach Express (public reads served from memory, socket.io handshakes).
 */
export function clientIp(
  remote: string | undefined,
  forwardedFor: string | string[] | undefined,
  trusted: (ip: string) => boolean = isLoopback,
): string {
  let ip = plain(remote ?? '');
  // Without X-Forwarded-For the socket's address is the client's, trusted proxy or not.
  if (forwardedFor && trusted(ip)) {
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor)
      .split(',')
      .map((h) => h.trim())
      .filter(Boolean);
    while (trusted(ip) && hops.length) ip = plain(hops.pop()!);
  }
  return trackedIp(ip);
}

/** An address as the limits count it (IPv6 by /64). */
export function trackedIp(ip: string | undefined): string {
  const v = plain(ip ?? '');
  if (!v) return 'unknown';
  return isIP(v) === 6 ? normalizeIp(v) : v;
}
