import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

/**
 * Where an outgoing webhook may post. A team owner chooses the URL, so without this check the hub
 * could be aimed at its own network (its Postgres, the cloud metadata service, an admin page on
 * loopback). Public addresses only, unless the organizer allows private ones for a closed event.
 */
export function privateAddress(ip: string): boolean {
  if (isIP(ip) === 4) {
    const [a, b] = ip.split('.').map(Number);
    return (
      a === 0 ||
      a === 10 ||
      a === 127 ||
      (a === 100 && b >= 64 && b <= 127) ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 198 && (b === 18 || b === 19)) ||
      a >= 224
    );
  }
  const v6 = ip.toLowerCase();
  if (v6.startsWith('::ffff:')) return privateAddress(v6.slice(7));
  return (
    v6 === '::' ||
    v6 === '::1' ||
    v6.startsWith('fc') ||
    v6.startsWith('fd') ||
    v6.startsWith('fe8') ||
    v6.startsWith('fe9') ||
    v6.startsWith('fea') ||
    v6.startsWith('feb') ||
    v6.startsWith('ff')
  );
}

/** Null when the URL may receive webhooks; else why not, in words for the team owner. */
export async function webhookTargetProblem(url: string, allowPrivate: boolean): Promise<string | null> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `${url} is not a URL`;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return `${url} is not an http(s) URL`;
  if (allowPrivate) return null;
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  } catch {
    return `${parsed.hostname} does not resolve to an address`;
  }
  const inside = addresses.find(privateAddress);
  return inside
    ? `${parsed.hostname} is a private or local address (${inside}); webhooks go to public addresses only`
    : null;
}
