// Where deliveries may go. Receiver URLs are absolute http(s) URLs without credentials. Unless
// WEBHOOK_ALLOW_PRIVATE_TARGETS is on, loopback, private, link-local and other non-public addresses
// are refused: the literal host when a receiver is added, and every resolved address at delivery
// time (the check runs inside the connection's DNS lookup, so a name cannot resolve to a public
// address for the check and to a private one for the connection). IPv6 forms that carry an IPv4
// address (NAT64, 6to4, Teredo, mapped, compatible, SIIT) are judged by that IPv4 address.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { badInput } from '../../kernel/errors.ts';

export const MAX_URL_LENGTH = 2048;

const nonPublic = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata endpoints
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 3], // multicast, reserved, broadcast
] as const) {
  nonPublic.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128],
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  nonPublic.addSubnet(network, prefix, 'ipv6');
}

/** The eight 16-bit words of an IPv6 address (already validated by isIP), a trailing dotted quad included. */
function ipv6Words(address: string): number[] {
  let text = address.replace(/%.*$/, ''); // zone id
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const words = (part: string | undefined) => (part ? part.split(':').map((h) => parseInt(h, 16)) : []);
  const [head, tail] = text.split('::');
  if (tail === undefined) return words(head);
  const [h, t] = [words(head), words(tail)];
  return [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
}

const ipv4 = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;

/**
 * The IPv4 addresses an IPv6 address carries and a network may route it to: IPv4-mapped
 * (::ffff:0:0/96), IPv4-compatible (::/96), SIIT (::ffff:0:0:0/96), NAT64 (64:ff9b::/96), 6to4
 * (2002::/16: bits 16-47) and Teredo (2001::/32: the server in bits 32-63, the client XOR 0xffffffff
 * in the last 32 bits). [64:ff9b::a9fe:a9fe] is the metadata address 169.254.169.254.
 */
export function embeddedIPv4(address: string): string[] {
  const w = ipv6Words(address);
  const zero = (from: number, to: number) => w.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && w[5] === 0xffff) return [ipv4(w[6]!, w[7]!)];
  if (zero(0, 6)) return [ipv4(w[6]!, w[7]!)];
  if (zero(0, 4) && w[4] === 0xffff && w[5] === 0) return [ipv4(w[6]!, w[7]!)];
  if (w[0] === 0x64 && w[1] === 0xff9b && zero(2, 6)) return [ipv4(w[6]!, w[7]!)];
  if (w[0] === 0x2002) return [ipv4(w[1]!, w[2]!)];
  if (w[0] === 0x2001 && w[1] === 0) return [ipv4(w[2]!, w[3]!), ipv4(w[6]! ^ 0xffff, w[7]! ^ 0xffff)];
  return [];
}

/** True for an address a public webhook target never has (IPv4 embedded in IPv6 is judged as IPv4). */
export function isNonPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 4) return nonPublic.check(address, 'ipv4');
  return nonPublic.check(address, 'ipv6') || embeddedIPv4(address).some((v4) => nonPublic.check(v4, 'ipv4'));
}

/** The host of a URL as an IP literal ("[::1]" -> "::1"), or null when it is a name. */
export function literalHost(url: URL): string | null {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) ? host : null;
}

/** Validates a receiver URL for `receivers add`; throws BAD_USER_INPUT naming the problem. */
export function parseReceiverUrl(raw: string, options: { allowPrivateTargets: boolean }): string {
  const reason = receiverUrlProblem(raw, options);
  if (reason) throw badInput([{ name: 'url', reason }]);
  return new URL(raw).toString();
}

function receiverUrlProblem(raw: string, options: { allowPrivateTargets: boolean }): string | null {
  if (raw.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute http(s) URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL';
  if (url.username || url.password) return 'must not contain credentials (use a signing secret instead)';
  // A bare `#` leaves url.hash empty; a '#' anywhere else in a valid URL starts the fragment too.
  if (url.hash || raw.includes('#')) return 'must not contain a fragment';
  if (url.port === '0') return 'must not use port 0';
  // What is stored is the normalised form, which percent-encodes non-ASCII: it is the one bounded.
  if (url.toString().length > MAX_URL_LENGTH)
    return `must be at most ${MAX_URL_LENGTH} characters once normalised (non-ASCII characters are percent-encoded)`;
  if (!options.allowPrivateTargets) {
    const literal = literalHost(url);
    // `localhost.` is the same name, fully qualified (the resolver ignores the trailing dot).
    const name = url.hostname.replace(/\.$/, '');
    if ((literal && isNonPublicAddress(literal)) || name === 'localhost' || name.endsWith('.localhost')) {
      return 'points to a loopback or private address; set WEBHOOK_ALLOW_PRIVATE_TARGETS=true to allow it';
    }
  }
  return null;
}

/** Raised (as a connection error) when a name resolves to an address that is not allowed. */
export class PrivateTargetError extends Error {
  readonly code = 'private_target';
  constructor() {
    super('the receiver resolves to a loopback or private address');
    this.name = 'PrivateTargetError';
  }
}

/** A dns.lookup for http.request that refuses non-public addresses (or passes through when allowed). */
export function guardedLookup(allowPrivateTargets: boolean): LookupFunction {
  if (allowPrivateTargets) return dnsLookup as LookupFunction;
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error);
      if (addresses.length === 0 || addresses.some((a) => isNonPublicAddress(a.address)))
        return callback(new PrivateTargetError());
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  }) as LookupFunction;
}
