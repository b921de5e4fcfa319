// Feed cursors: opaque to clients (base64url), a position (xid, position) in feed order inside.
// The version prefix lets the format change later without misreading old cursors.
// A view's feed (GET /v1/events?view=) has cursors of its own: the position (base 36, so that the
// cursor stays within the 64 characters of every cursor) and the digest of the view's canonical text
// (views/view.ts viewDigest), so that a cursor serves only the feed it came from.
/** A place in feed order: just after the event with this (xid, position). Decimal strings (xid8 is 64-bit). */
export type FeedPosition = { xid: string; position: string };

export const FEED_START: FeedPosition = { xid: '0', position: '0' };

const INNER = /^v1\.(\d{1,20})\.(\d{1,19})$/;
const VIEW_INNER = /^w1\.([0-9a-z]{1,13})\.([0-9a-z]{1,13})\.([0-9a-f]{16})$/;
const MAX_XID = 2n ** 64n - 1n;
const MAX_POSITION = 2n ** 63n - 1n;

/** The cursor of a position: of the feed itself, or of the view with this digest. */
export function encodeCursor(p: FeedPosition, view: string | null = null): string {
  const inner =
    view === null
      ? `v1.${p.xid}.${p.position}`
      : `w1.${BigInt(p.xid).toString(36)}.${BigInt(p.position).toString(36)}.${view}`;
  return Buffer.from(inner).toString('base64url');
}

const base36 = (digits: string): bigint => [...digits].reduce((n, d) => n * 36n + BigInt(parseInt(d, 36)), 0n);

/** The position in a cursor and the view it belongs to (null: the feed itself), or null for anything that is not one of ours. */
export function readCursor(cursor: string): { position: FeedPosition; view: string | null } | null {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(cursor)) return null;
  const inner = Buffer.from(cursor, 'base64url').toString('latin1');
  const plain = INNER.exec(inner);
  const ofView = plain ? null : VIEW_INNER.exec(inner);
  const match = plain ?? ofView;
  if (!match) return null;
  const [xid, position] = plain ? [BigInt(match[1]!), BigInt(match[2]!)] : [base36(match[1]!), base36(match[2]!)];
  if (xid > MAX_XID || position > MAX_POSITION) return null;
  return { position: { xid: xid.toString(), position: position.toString() }, view: ofView ? ofView[3]! : null };
}

/** The position in a cursor (of the feed or of a view), or null for anything that is not one of ours. */
export function decodeCursor(cursor: string): FeedPosition | null {
  return readCursor(cursor)?.position ?? null;
}
