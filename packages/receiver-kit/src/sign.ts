// The signature of SPEC.md section 6: HMAC-SHA256 over `<timestamp>.<raw body>`, hex, as `sha256=<hex>`.
// Exposed so that consumers can sign test deliveries for their own receivers exactly as the service does.
import { createHmac } from 'node:crypto';
import { HEADERS, type WebhookEventType } from './event.ts';

export const USER_AGENT = 'Service-Data-API-Webhooks/1';

/** The raw HMAC-SHA256 digest of `${timestamp}.${body}` (32 bytes). */
export function signatureDigest(secret: string, timestamp: string, body: Buffer | string): Buffer {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest();
}

/** The `x-service-signature` header value for `body` sent at `timestamp` (epoch ms as a string). */
export function signPayload(secret: string, timestamp: string, body: Buffer | string): string {
  return `sha256=${signatureDigest(secret, timestamp, body).toString('hex')}`;
}

/** Every delivery header for one body, signed when a secret is given. */
export function deliveryHeaders(options: { body: Buffer | string; eventId: string; eventType: WebhookEventType | string; resourceVersion?: number; secret?: string | null; timestamp?: number }): Record<string, string> {
  const timestamp = String(options.timestamp ?? Date.now());
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    [HEADERS.eventId]: options.eventId,
    [HEADERS.eventType]: options.eventType,
    [HEADERS.timestamp]: timestamp,
  };
  if (options.resourceVersion !== undefined) headers[HEADERS.resourceVersion] = String(options.resourceVersion);
  if (options.secret) headers[HEADERS.signature] = signPayload(options.secret, timestamp, options.body);
  return headers;
}
