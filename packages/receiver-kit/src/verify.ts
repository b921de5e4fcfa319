// Verifies one delivery: headers present, signature over the raw bytes (constant-time), timestamp
// inside the tolerance window, body a v1 event. Returns a typed result instead of throwing, so that
// a receiver maps each failure to its status without try/catch. Both signature schemes are accepted,
// told apart by their headers: `webhook-id`/`webhook-timestamp`/`webhook-signature` (Standard
// Webhooks, timestamp in seconds, `v1,<base64>` signatures keyed with the bytes after `whsec_`) or
// `x-service-*` (docs/contract.md, "Delivery headers and signature"; the default).
import { timingSafeEqual } from 'node:crypto';
import { deliveryKind, HEADERS, type OtherEvent, STANDARD_HEADERS, type WebhookEvent } from './event.ts';
import { type SignatureScheme, signatureDigest, standardSignatureDigest } from './sign.ts';

export const DEFAULT_TOLERANCE_MS = 5 * 60_000;

export type VerifyFailureReason =
  | 'MISSING_HEADERS' // a header the service always sends (in the scheme its headers announce) is absent
  | 'MALFORMED_TIMESTAMP' // x-service-timestamp is not epoch milliseconds (webhook-timestamp: not epoch seconds)
  | 'NO_SECRET_CONFIGURED' // no secret and no explicit allowUnsigned: every delivery is refused (fail closed)
  | 'MISSING_SIGNATURE' // a secret is configured but the delivery is unsigned
  | 'BAD_SIGNATURE_FORMAT' // not `sha256=<64 hex>` (webhook-signature: no `v1,<base64>` in it)
  | 'SIGNATURE_MISMATCH'
  | 'TIMESTAMP_OUTSIDE_TOLERANCE' // replayed or badly skewed
  | 'BODY_NOT_JSON'
  | 'NOT_AN_EVENT'; // JSON, but not the v1 event shape (or headers disagree with the body)

export type VerifyFailure = {
  ok: false;
  reason: VerifyFailureReason;
  message: string;
  /** 401 for authenticity, 400 for shape. */ status: 400 | 401;
};
export type VerifySuccess = {
  ok: true;
  event: WebhookEvent;
  other?: undefined;
  /** The delivery timestamp (epoch ms; a Standard Webhooks timestamp is whole seconds). */
  timestamp: number;
  signed: boolean;
  /** Which headers the delivery came with. */
  scheme: SignatureScheme;
};
/** Authentic, but not a catalog event (a WEBHOOK_TEST, or a type newer than this kit): acknowledge it with a 2xx, apply nothing. */
export type VerifiedOther = {
  ok: true;
  event?: undefined;
  other: OtherEvent;
  timestamp: number;
  signed: boolean;
  scheme: SignatureScheme;
};
export type VerifyResult = VerifySuccess | VerifiedOther | VerifyFailure;

export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

export type VerifyOptions = {
  rawBody: Buffer | string;
  headers: HeaderSource;
  /**
   * The receiver's signing secret; several during a rotation (any one may sign). Required unless
   * allowUnsigned. For a Standard Webhooks receiver, its `whsec_...` secret as the service showed it.
   */
  secret?: string | readonly string[] | null;
  /** Accept deliveries without checking a signature when no secret is given (a receiver whose service sends unsigned). */
  allowUnsigned?: boolean;
  toleranceMs?: number;
  /** Current time in epoch ms (tests). */
  now?: number;
};

const SIGNATURE_RE = /^sha256=([0-9a-f]{64})$/i;

const fail = (reason: VerifyFailureReason, message: string, status: 400 | 401): VerifyFailure => ({
  ok: false,
  reason,
  message,
  status,
});

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

export const NO_SECRET_MESSAGE =
  'no signing secret is configured; give the secret (or several during a rotation), or pass allowUnsigned: true to accept unsigned deliveries';

/** What the headers of one scheme say, or why they cannot be trusted. */
type Authenticated = { id: string; timestamp: number } | VerifyFailure;

function authenticateServiceV1(options: VerifyOptions, secrets: readonly string[]): Authenticated {
  const { headers } = options;
  const missing = [HEADERS.eventId, HEADERS.eventType, HEADERS.timestamp].filter((name) => !header(headers, name));
  if (missing.length) return fail('MISSING_HEADERS', `missing header(s): ${missing.join(', ')}`, 400);
  const timestampText = header(headers, HEADERS.timestamp)!;
  if (!/^\d{1,15}$/.test(timestampText))
    return fail('MALFORMED_TIMESTAMP', `${HEADERS.timestamp} must be epoch milliseconds`, 400);
  if (secrets.length) {
    const signature = header(headers, HEADERS.signature);
    if (!signature) return fail('MISSING_SIGNATURE', `missing header: ${HEADERS.signature}`, 401);
    const match = SIGNATURE_RE.exec(signature);
    if (!match) return fail('BAD_SIGNATURE_FORMAT', `${HEADERS.signature} must be sha256=<64 hex digits>`, 401);
    const presented = Buffer.from(match[1]!, 'hex');
    // Both sides are 32-byte digests, so timingSafeEqual compares equal lengths by construction.
    const valid = secrets.some((secret) =>
      timingSafeEqual(signatureDigest(secret, timestampText, options.rawBody), presented),
    );
    if (!valid) return fail('SIGNATURE_MISMATCH', 'signature does not match the body and timestamp', 401);
  }
  return { id: header(headers, HEADERS.eventId)!, timestamp: Number(timestampText) };
}

/** `v1,<base64 of 32 bytes>` entries of a webhook-signature header (other versions are ignored, as the spec says). */
function standardSignatures(value: string): Buffer[] {
  return value
    .split(' ')
    .map((entry) => /^v1,([A-Za-z0-9+/]{43}=)$/.exec(entry)?.[1])
    .filter((b64): b64 is string => b64 !== undefined)
    .map((b64) => Buffer.from(b64, 'base64'));
}

function authenticateStandard(options: VerifyOptions, secrets: readonly string[]): Authenticated {
  const { headers } = options;
  const missing = [STANDARD_HEADERS.id, STANDARD_HEADERS.timestamp].filter((name) => !header(headers, name));
  if (missing.length) return fail('MISSING_HEADERS', `missing header(s): ${missing.join(', ')}`, 400);
  const timestampText = header(headers, STANDARD_HEADERS.timestamp)!;
  if (!/^\d{1,12}$/.test(timestampText))
    return fail('MALFORMED_TIMESTAMP', `${STANDARD_HEADERS.timestamp} must be epoch seconds`, 400);
  const id = header(headers, STANDARD_HEADERS.id)!;
  if (secrets.length) {
    const signature = header(headers, STANDARD_HEADERS.signature);
    if (!signature) return fail('MISSING_SIGNATURE', `missing header: ${STANDARD_HEADERS.signature}`, 401);
    const presented = standardSignatures(signature);
    if (!presented.length)
      return fail(
        'BAD_SIGNATURE_FORMAT',
        `${STANDARD_HEADERS.signature} must hold v1,<base64 of 32 bytes> (space-separated)`,
        401,
      );
    const expected = secrets.map((secret) => standardSignatureDigest(secret, id, timestampText, options.rawBody));
    // Every pair is compared (32 bytes each): no early exit that would tell which one matched.
    let valid = false;
    for (const e of expected) for (const p of presented) valid = timingSafeEqual(e, p) || valid;
    if (!valid) return fail('SIGNATURE_MISMATCH', 'no signature matches the body, id and timestamp', 401);
  }
  return { id, timestamp: Number(timestampText) * 1000 };
}

/** The scheme a delivery's headers announce: any webhook-* header means Standard Webhooks. */
export function detectScheme(headers: HeaderSource): SignatureScheme {
  return Object.values(STANDARD_HEADERS).some((name) => header(headers, name) !== undefined)
    ? 'standard-webhooks'
    : 'service-v1';
}

export function verifyDelivery(options: VerifyOptions): VerifyResult {
  const { headers } = options;
  const secrets = secretList(options.secret);
  // Fail closed: a missing or empty secret is a configuration mistake, not a wish to skip the check.
  if (secrets.length === 0 && options.allowUnsigned !== true)
    return fail('NO_SECRET_CONFIGURED', NO_SECRET_MESSAGE, 401);
  const toleranceMs = options.toleranceMs ?? DEFAULT_TOLERANCE_MS;

  const scheme = detectScheme(headers);
  const authenticated =
    scheme === 'standard-webhooks' ? authenticateStandard(options, secrets) : authenticateServiceV1(options, secrets);
  if ('ok' in authenticated) return authenticated;
  const { timestamp } = authenticated;
  const timestampHeader = scheme === 'standard-webhooks' ? STANDARD_HEADERS.timestamp : HEADERS.timestamp;

  // Checked after the signature so that an unsigned forgery learns nothing about the window.
  const skew = (options.now ?? Date.now()) - timestamp;
  if (Math.abs(skew) > toleranceMs) {
    return fail(
      'TIMESTAMP_OUTSIDE_TOLERANCE',
      `${timestampHeader} is ${skew > 0 ? 'older' : 'newer'} than the ${toleranceMs} ms tolerance`,
      401,
    );
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
  const idHeader = scheme === 'standard-webhooks' ? STANDARD_HEADERS.id : HEADERS.eventId;
  if (authenticated.id !== event.id) return fail('NOT_AN_EVENT', `${idHeader} does not equal the body's id`, 400);
  const typeHeader = header(headers, HEADERS.eventType);
  if (typeHeader !== undefined && typeHeader !== event.type)
    return fail('NOT_AN_EVENT', `${HEADERS.eventType} does not equal the body's type`, 400);
  const signed = secrets.length > 0;
  if (kind.kind === 'other') return { ok: true, other: event as OtherEvent, timestamp, signed, scheme };
  return { ok: true, event: event as WebhookEvent, timestamp, signed, scheme };
}

/** The event id a delivery's headers name (either scheme), for logs. */
export function deliveryEventId(headers: HeaderSource): string | undefined {
  return header(headers, STANDARD_HEADERS.id) ?? header(headers, HEADERS.eventId);
}
