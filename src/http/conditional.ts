// HTTP caching of the /v1 reads (docs/contract.md, "Caching"): a strong ETag from the stored digest (never a hash
// computed per request), `Cache-Control: private, no-cache` (a client or private cache may keep the
// answer but must revalidate it), and 304 for a matching If-None-Match.
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';

const CACHE_CONTROL = 'private, no-cache';
// Bounds the array handed to the database; a client holds one tag per URL in practice.
const MAX_TAGS = 16;
const TAG = /^(?:W\/)?"([\x21\x23-\x7e]*)"$/;

/**
 * The entity tags of an If-None-Match header, unquoted: '*' for any; null when absent or unusable.
 * If-None-Match uses the weak comparison (RFC 9110 13.1.2), so `W/"x"` counts as `"x"`.
 */
export function heldTags(header: string | undefined): string[] | '*' | null {
  if (!header) return null;
  if (header.trim() === '*') return '*';
  const tags: string[] = [];
  for (const part of header.split(',', MAX_TAGS)) {
    const tag = TAG.exec(part.trim())?.[1];
    if (tag !== undefined) tags.push(tag);
  }
  return tags.length ? tags : null;
}

/**
 * The tag of a representation identified by a short string (positions, a cursor): its md5 in hex,
 * the format of the stored digests. Tens of bytes, not the body.
 */
export const tagOfVersion = (version: string): string => createHash('md5').update(version).digest('hex');

/**
 * Answers a cacheable read: 304 with the tag and no body when `body` is null (the client holds
 * this representation), else 200 with the JSON body. Both carry ETag and Cache-Control.
 * `bytes`: the body's length in UTF-8 when the caller knows it (the database stores it with the
 * text): counting a list page's few hundred kB of text costs about a millisecond, more than
 * everything else the service does for the request. The head is written before the body, so that
 * node:http does not count the body a second time for its own bookkeeping.
 */
export function sendCacheable(res: ServerResponse, digest: string, body: string | null, bytes?: number): void {
  res.setHeader('ETag', `"${digest}"`);
  res.setHeader('Cache-Control', CACHE_CONTROL);
  if (body === null) {
    res.writeHead(304);
    res.end();
    return;
  }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', bytes ?? Buffer.byteLength(body));
  res.writeHead(200);
  res.end(body);
}
