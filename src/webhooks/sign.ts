// The delivery headers of SPEC.md section 6. The signature covers `<timestamp>.<body bytes>` exactly
// as sent: the body is the stored event body, encoded once, signed and sent as the same buffer.
import { createHmac } from 'node:crypto';

export const USER_AGENT = 'Service-Data-API-Webhooks/1';

/** `sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`, the x-service-signature value. */
export function signDelivery(secret: string, timestamp: string, body: Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex')}`;
}

/** The six headers (five without a secret) for one attempt; `timestamp` is fresh per attempt. */
export function deliveryHeaders(delivery: { eventId: string; eventType: string; body: Buffer; secret: string | null; timestamp: number }): Record<string, string> {
  const timestamp = String(delivery.timestamp);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-service-event-id': delivery.eventId,
    'x-service-event-type': delivery.eventType,
    'x-service-timestamp': timestamp,
  };
  if (delivery.secret) headers['x-service-signature'] = signDelivery(delivery.secret, timestamp, delivery.body);
  return headers;
}
