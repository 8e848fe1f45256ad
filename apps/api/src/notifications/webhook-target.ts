import { lookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup as lookupCallback } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';

/**
 * Where an outgoing webhook may post. A team owner chooses the URL, so without this check the hub
 * could be aimed at its own network (its Postgres, the cloud metadata service, an admin page on
 * loopback). Public addresses only, unless the organizer allows private ones for a closed event.
 *
 * Addresses are judged on their parsed value, never on their spelling: an IPv6 address is read into
 * its 16 bytes first, so `::ffff:127.0.0.1`, `::ffff:7f00:1` and `0:0:0:0:0:ffff:127.0.0.1` are the
 * same loopback address, and an IPv4 address carried inside IPv6 (mapped, translated, NAT64, 6to4,
 * Teredo) is judged as that IPv4 address.
 */

/** An IPv4 address's 4 bytes, or null. */
function v4Bytes(ip: string): number[] | null {
  if (isIP(ip) !== 4) return null;
  return ip.split('.').map(Number);
}

/** An IPv6 address's 16 bytes (a trailing dotted quad and a `%zone` allowed), or null. */
export function v6Bytes(input: string): number[] | null {
  const ip = input.replace(/%.*$/, '');
  if (isIP(ip) !== 6) return null;
  let head = ip;
  let tail4: number[] = [];
  const dotted = /(?:^|:)(\d+\.\d+\.\d+\.\d+)$/.exec(ip);
  if (dotted) {
    const v4 = v4Bytes(dotted[1]);
    if (!v4) return null;
    tail4 = v4;
    head = ip.slice(0, ip.length - dotted[1].length);
    // "::1.2.3.4" leaves "::"; "1::2:1.2.3.4" leaves "1::2:": drop a lone trailing colon.
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const groupsWanted = 8 - tail4.length / 2;
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  let groups: number[];
  const gap = head.indexOf('::');
  if (gap >= 0) {
    const left = parse(head.slice(0, gap));
    const right = parse(head.slice(gap + 2));
    groups = [...left, ...new Array(groupsWanted - left.length - right.length).fill(0), ...right];
  } else groups = parse(head);
  if (groups.length !== groupsWanted || groups.some((g) => !(g >= 0 && g <= 0xffff))) return null;
  return [...groups.flatMap((g) => [g >> 8, g & 0xff]), ...tail4];
}

function privateV4([a, b, c]: number[]): boolean {
  return (
    a === 0 || // "this network"
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) || // shared address space (carrier-grade NAT)
    (a === 169 && b === 254) || // link-local, the cloud metadata service
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0 && (c === 0 || c === 2)) || // IETF protocol assignments, TEST-NET-1
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    (a === 198 && b === 51 && c === 100) || // TEST-NET-2
    (a === 203 && b === 0 && c === 113) || // TEST-NET-3
    a >= 224 // multicast, reserved, broadcast
  );
}

const zero = (bytes: number[], from: number, to: number) => bytes.slice(from, to).every((x) => x === 0);

function privateV6(b: number[]): boolean {
  // ::/96: the unspecified address, loopback ::1 and the deprecated IPv4-compatible ::a.b.c.d.
  if (zero(b, 0, 12)) return true;
  // ::ffff:a.b.c.d (IPv4-mapped) and ::ffff:0:a.b.c.d (IPv4-translated): the IPv4 address decides.
  if (
    zero(b, 0, 8) &&
    ((b[8] === 0 && b[9] === 0 && b[10] === 0xff && b[11] === 0xff) ||
      (b[8] === 0xff && b[9] === 0xff && b[10] === 0 && b[11] === 0))
  )
    return privateV4(b.slice(12));
  // 64:ff9b::/96, NAT64's well-known prefix: the IPv4 address decides. 64:ff9b:1::/48 is local use.
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b) {
    if (zero(b, 4, 12)) return privateV4(b.slice(12));
    return b[4] === 0 && b[5] === 1;
  }
  // 2002::/16, 6to4: the IPv4 address in bytes 2-5 decides.
  if (b[0] === 0x20 && b[1] === 0x02) return privateV4(b.slice(2, 6));
  // 2001::/32, Teredo: the client's IPv4 address (the last 4 bytes, inverted) and the server's decide.
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0 && b[3] === 0)
    return privateV4(b.slice(4, 8)) || privateV4(b.slice(12).map((x) => x ^ 0xff));
  // 2001:db8::/32, documentation.
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0x0d && b[3] === 0xb8) return true;
  // 100::/64, discard only.
  if (b[0] === 0x01 && b[1] === 0 && zero(b, 2, 8)) return true;
  return (
    (b[0] & 0xfe) === 0xfc || // fc00::/7, unique local (the cloud metadata fd00:ec2::254 too)
    (b[0] === 0xfe && (b[1] & 0xc0) === 0x80) || // fe80::/10, link-local
    (b[0] === 0xfe && (b[1] & 0xc0) === 0xc0) || // fec0::/10, the old site-local
    b[0] === 0xff // multicast
  );
}

/** True for every address a webhook must not reach: private, loopback, link-local, metadata… */
export function privateAddress(ip: string): boolean {
  const v4 = v4Bytes(ip);
  if (v4) return privateV4(v4);
  const v6 = v6Bytes(ip);
  // Not an address at all: never let it through.
  return v6 ? privateV6(v6) : true;
}

const refusal = (host: string, address: string) =>
  `${host} is a private or local address (${address}); webhooks go to public addresses only`;

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
  return inside ? refusal(parsed.hostname, inside) : null;
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for the connection itself (node:http's `lookup` option): the addresses DNS answers at
 * connect time are checked too, so a name that resolved to a public address when it was checked and
 * to a private one a moment later (DNS rebinding) is never connected to.
 */
export function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  lookupCallback(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
    if (err) return callback(err, []);
    const inside = addresses.find((a) => privateAddress(a.address));
    if (inside) {
      const refused: NodeJS.ErrnoException = new Error(refusal(hostname, inside.address));
      refused.code = 'EPRIVATEADDRESS';
      return callback(refused, []);
    }
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0].address, addresses[0].family);
  });
}

/**
 * POSTs a webhook body and answers the receiver's status code. Redirects are not followed. Unless
 * private targets are allowed, the connection is made only to an address that passes the check:
 * DNS is asked again at connect time through `guardedLookup` (an `EPRIVATEADDRESS` error when it
 * answers an inside address), so no check-then-connect gap is left for DNS rebinding.
 */
export function postWebhook(
  url: string,
  opts: { headers: Record<string, string>; body: string; timeoutMs: number; allowPrivate: boolean },
): Promise<number> {
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const body = Buffer.from(opts.body);
  return new Promise<number>((resolve, reject) => {
    const req = send(
      target,
      {
        method: 'POST',
        headers: { ...opts.headers, 'content-length': String(body.length) },
        lookup: opts.allowPrivate ? undefined : (guardedLookup as never),
      },
      (res) => {
        clearTimeout(timer);
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    // The whole attempt, connecting included, within the timeout.
    const timer = setTimeout(() => {
      const err = new Error(`no answer within ${opts.timeoutMs} ms`);
      err.name = 'TimeoutError';
      req.destroy(err);
    }, opts.timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body);
  });
}
