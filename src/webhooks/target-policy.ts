// Where deliveries may go. Receiver URLs are absolute http(s) URLs without credentials. Unless
// WEBHOOK_ALLOW_PRIVATE_TARGETS is on, loopback, private, link-local and other non-public addresses
// are refused: the literal host when a receiver is added, and every resolved address at delivery
// time (the check runs inside the connection's DNS lookup, so a name cannot resolve to a public
// address for the check and to a private one for the connection).
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { badInput } from '../errors.ts';

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

/** True for an address a public webhook target never has (IPv4-mapped IPv6 is checked as IPv4). */
export function isNonPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return nonPublic.check(mapped[1]!, 'ipv4');
  return nonPublic.check(address, family === 4 ? 'ipv4' : 'ipv6');
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
  if (url.hash) return 'must not contain a fragment';
  if (!options.allowPrivateTargets) {
    const literal = literalHost(url);
    if ((literal && isNonPublicAddress(literal)) || url.hostname === 'localhost' || url.hostname.endsWith('.localhost')) {
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
      if (addresses.length === 0 || addresses.some((a) => isNonPublicAddress(a.address))) return callback(new PrivateTargetError());
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  }) as LookupFunction;
}
