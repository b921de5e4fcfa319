// The two signatures a delivery can carry, and every delivery header for one body:
// - SERVICE_V1 (docs/contract.md, "Delivery headers"): HMAC-SHA256 over `<timestamp ms>.<raw body>`, hex, as
//   `sha256=<hex>`, keyed with the secret string as it is.
// - STANDARD_WEBHOOKS (standardwebhooks.com, spec v1): HMAC-SHA256 over `<webhook-id>.<timestamp s>.<raw body>`,
//   base64, as `v1,<base64>`, keyed with the bytes of the base64 after `whsec_`; during a rotation's
//   grace one such signature per secret, space-separated.
// Exposed so that consumers can sign test deliveries for their own receivers exactly as the service does.
import { createHmac } from 'node:crypto';
import { HEADERS, STANDARD_HEADERS, type WebhookEventType } from './event.ts';

export const USER_AGENT = 'Service-Data-API-Webhooks/1';

export type SignatureScheme = 'service-v1' | 'standard-webhooks';

/** The prefix of a Standard Webhooks secret; base64 of the key bytes follows it. */
export const STANDARD_SECRET_PREFIX = 'whsec_';

/** The raw HMAC-SHA256 digest of `${timestamp}.${body}` (32 bytes), SERVICE_V1. */
export function signatureDigest(secret: string, timestamp: string, body: Buffer | string): Buffer {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest();
}

/** The `x-service-signature` header value for `body` sent at `timestamp` (epoch ms as a string). */
export function signPayload(secret: string, timestamp: string, body: Buffer | string): string {
  return `sha256=${signatureDigest(secret, timestamp, body).toString('hex')}`;
}

/** The key bytes of a Standard Webhooks secret: the base64 after `whsec_` (a bare base64 secret is accepted too, as the reference libraries do). */
export function standardSecretKey(secret: string): Buffer {
  return Buffer.from(
    secret.startsWith(STANDARD_SECRET_PREFIX) ? secret.slice(STANDARD_SECRET_PREFIX.length) : secret,
    'base64',
  );
}

/** The raw HMAC-SHA256 digest of `${id}.${timestamp}.${body}` (32 bytes), STANDARD_WEBHOOKS. */
export function standardSignatureDigest(secret: string, id: string, timestamp: string, body: Buffer | string): Buffer {
  return createHmac('sha256', standardSecretKey(secret)).update(`${id}.${timestamp}.`).update(body).digest();
}

/** The `webhook-signature` header value: `v1,<base64>` per secret (the newest first), space-separated. */
export function signStandard(
  secrets: string | readonly string[],
  id: string,
  timestamp: string,
  body: Buffer | string,
): string {
  return (typeof secrets === 'string' ? [secrets] : secrets)
    .map((secret) => `v1,${standardSignatureDigest(secret, id, timestamp, body).toString('base64')}`)
    .join(' ');
}

/**
 * Every delivery header for one body. SERVICE_V1 (the default) is signed when a secret is given;
 * STANDARD_WEBHOOKS is always signed, with `previousSecret` too while a rotation's grace runs.
 * `timestamp` is epoch ms (sent as seconds under STANDARD_WEBHOOKS); `resourceVersion` is sent as
 * `x-service-resource-version` when given.
 */
export function deliveryHeaders(options: {
  body: Buffer | string;
  eventId: string;
  eventType: WebhookEventType | string;
  secret?: string | null;
  previousSecret?: string | null;
  scheme?: SignatureScheme;
  timestamp?: number;
  resourceVersion?: number | string | null;
}): Record<string, string> {
  const ms = options.timestamp ?? Date.now();
  const version =
    options.resourceVersion === undefined || options.resourceVersion === null ? null : String(options.resourceVersion);
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': USER_AGENT };
  if (options.scheme === 'standard-webhooks') {
    if (!options.secret) throw new TypeError('a Standard Webhooks delivery is always signed: give its secret');
    const seconds = String(Math.floor(ms / 1000));
    headers[STANDARD_HEADERS.id] = options.eventId;
    headers[STANDARD_HEADERS.timestamp] = seconds;
    headers[STANDARD_HEADERS.signature] = signStandard(
      options.previousSecret ? [options.secret, options.previousSecret] : [options.secret],
      options.eventId,
      seconds,
      options.body,
    );
    headers[HEADERS.eventType] = options.eventType;
    if (version !== null) headers[HEADERS.resourceVersion] = version;
  } else {
    const timestamp = String(ms);
    headers[HEADERS.eventId] = options.eventId;
    headers[HEADERS.eventType] = options.eventType;
    headers[HEADERS.timestamp] = timestamp;
    if (version !== null) headers[HEADERS.resourceVersion] = version;
    if (options.secret) headers[HEADERS.signature] = signPayload(options.secret, timestamp, options.body);
  }
  return headers;
}
