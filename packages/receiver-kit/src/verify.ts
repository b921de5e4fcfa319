// Verifies one delivery: headers present, signature over the raw bytes (constant-time), timestamp
// inside the tolerance window, body a v1 event. Returns a typed result instead of throwing, so that
// a receiver maps each failure to its status without try/catch.
import { timingSafeEqual } from 'node:crypto';
import { deliveryKind, HEADERS, type OtherEvent, type WebhookEvent } from './event.ts';
import { signatureDigest } from './sign.ts';

export const DEFAULT_TOLERANCE_MS = 5 * 60_000;

export type VerifyFailureReason =
  | 'MISSING_HEADERS' // an x-service-* header the service always sends is absent
  | 'MALFORMED_TIMESTAMP' // x-service-timestamp is not epoch milliseconds
  | 'NO_SECRET_CONFIGURED' // no secret and no explicit allowUnsigned: every delivery is refused (fail closed)
  | 'MISSING_SIGNATURE' // a secret is configured but the delivery is unsigned
  | 'BAD_SIGNATURE_FORMAT' // not `sha256=<64 hex>`
  | 'SIGNATURE_MISMATCH'
  | 'TIMESTAMP_OUTSIDE_TOLERANCE' // replayed or badly skewed
  | 'BODY_NOT_JSON'
  | 'NOT_AN_EVENT' // JSON, but not the v1 event shape (or headers disagree with the body)
  ;

export type VerifyFailure = { ok: false; reason: VerifyFailureReason; message: string; /** 401 for authenticity, 400 for shape. */ status: 400 | 401 };
export type VerifySuccess = { ok: true; event: WebhookEvent; other?: undefined; /** The delivery timestamp (epoch ms). */ timestamp: number; signed: boolean };
/** Authentic, but not a catalog event (a WEBHOOK_TEST, or a type newer than this kit): acknowledge it with a 2xx, apply nothing. */
export type VerifiedOther = { ok: true; event?: undefined; other: OtherEvent; timestamp: number; signed: boolean };
export type VerifyResult = VerifySuccess | VerifiedOther | VerifyFailure;

export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

export type VerifyOptions = {
  rawBody: Buffer | string;
  headers: HeaderSource;
  /** The receiver's signing secret; several during a rotation (any one may sign). Required unless allowUnsigned. */
  secret?: string | readonly string[] | null;
  /** Accept deliveries without checking a signature when no secret is given (a receiver whose service sends unsigned). */
  allowUnsigned?: boolean;
  toleranceMs?: number;
  /** Current time in epoch ms (tests). */
  now?: number;
};

const SIGNATURE_RE = /^sha256=([0-9a-f]{64})$/i;

const fail = (reason: VerifyFailureReason, message: string, status: 400 | 401): VerifyFailure => ({ ok: false, reason, message, status });

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const value = record[name] ?? Object.entries(record).find(([k]) => k.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? value[0] : value;
}

/** The configured secrets, empty ones dropped (an empty WEBHOOK_SECRET is no secret). */
export function secretList(secret: string | readonly string[] | null | undefined): string[] {
  return (typeof secret === 'string' ? [secret] : (secret ?? [])).filter((s) => s.length > 0);
}

export const NO_SECRET_MESSAGE = 'no signing secret is configured; give the secret (or several during a rotation), or pass allowUnsigned: true to accept unsigned deliveries';

export function verifyDelivery(options: VerifyOptions): VerifyResult {
  const { headers } = options;
  const secrets = secretList(options.secret);
  // Fail closed: a missing or empty secret is a configuration mistake, not a wish to skip the check.
  if (secrets.length === 0 && options.allowUnsigned !== true) return fail('NO_SECRET_CONFIGURED', NO_SECRET_MESSAGE, 401);
  const toleranceMs = options.toleranceMs ?? DEFAULT_TOLERANCE_MS;

  const missing = [HEADERS.eventId, HEADERS.eventType, HEADERS.timestamp].filter((name) => !header(headers, name));
  if (missing.length) return fail('MISSING_HEADERS', `missing header(s): ${missing.join(', ')}`, 400);
  const timestampText = header(headers, HEADERS.timestamp)!;
  if (!/^\d{1,15}$/.test(timestampText)) return fail('MALFORMED_TIMESTAMP', `${HEADERS.timestamp} must be epoch milliseconds`, 400);
  const timestamp = Number(timestampText);

  if (secrets.length) {
    const signature = header(headers, HEADERS.signature);
    if (!signature) return fail('MISSING_SIGNATURE', `missing header: ${HEADERS.signature}`, 401);
    const match = SIGNATURE_RE.exec(signature);
    if (!match) return fail('BAD_SIGNATURE_FORMAT', `${HEADERS.signature} must be sha256=<64 hex digits>`, 401);
    const presented = Buffer.from(match[1]!, 'hex');
    // Both sides are 32-byte digests, so timingSafeEqual compares equal lengths by construction.
    const valid = secrets.some((secret) => timingSafeEqual(signatureDigest(secret, timestampText, options.rawBody), presented));
    if (!valid) return fail('SIGNATURE_MISMATCH', 'signature does not match the body and timestamp', 401);
  }

  // Checked after the signature so that an unsigned forgery learns nothing about the window.
  const skew = (options.now ?? Date.now()) - timestamp;
  if (Math.abs(skew) > toleranceMs) {
    return fail('TIMESTAMP_OUTSIDE_TOLERANCE', `${HEADERS.timestamp} is ${skew > 0 ? 'older' : 'newer'} than the ${toleranceMs} ms tolerance`, 401);
  }

  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof options.rawBody === 'string' ? options.rawBody : options.rawBody.toString('utf8'));
  } catch {
    return fail('BODY_NOT_JSON', 'body is not valid JSON', 400);
  }
  const kind = deliveryKind(parsed);
  if (kind.kind === 'invalid') return fail('NOT_AN_EVENT', kind.problem, 400);
  const event = parsed as WebhookEvent | OtherEvent;
  if (header(headers, HEADERS.eventId) !== event.id) return fail('NOT_AN_EVENT', `${HEADERS.eventId} does not equal the body's id`, 400);
  if (header(headers, HEADERS.eventType) !== event.type) return fail('NOT_AN_EVENT', `${HEADERS.eventType} does not equal the body's type`, 400);
  if (kind.kind === 'other') return { ok: true, other: event as OtherEvent, timestamp, signed: secrets.length > 0 };
  return { ok: true, event: event as WebhookEvent, timestamp, signed: secrets.length > 0 };
}
