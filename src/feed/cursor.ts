// Feed cursors: opaque to clients (base64url), a position (xid, position) in feed order inside.
// The version prefix lets the format change later without misreading old cursors.
/** A place in feed order: just after the event with this (xid, position). Decimal strings (xid8 is 64-bit). */
export type FeedPosition = { xid: string; position: string };

export const FEED_START: FeedPosition = { xid: '0', position: '0' };

const INNER = /^v1\.(\d{1,20})\.(\d{1,19})$/;
const MAX_XID = 2n ** 64n - 1n;
const MAX_POSITION = 2n ** 63n - 1n;

export function encodeCursor(p: FeedPosition): string {
  return Buffer.from(`v1.${p.xid}.${p.position}`).toString('base64url');
}

/** The position in a cursor, or null for anything that is not one of ours. */
export function decodeCursor(cursor: string): FeedPosition | null {
  const match = /^[A-Za-z0-9_-]{1,64}$/.test(cursor)
    ? INNER.exec(Buffer.from(cursor, 'base64url').toString('latin1'))
    : null;
  if (!match || BigInt(match[1]!) > MAX_XID || BigInt(match[2]!) > MAX_POSITION) return null;
  return { xid: BigInt(match[1]!).toString(), position: BigInt(match[2]!).toString() };
}
