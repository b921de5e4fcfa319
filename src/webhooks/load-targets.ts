// What a batch of fetched jobs needs to be sent: the stored event bodies and the receivers, read in
// two plain queries per batch (no ORM on the hot path).
import type { Pool } from 'pg';
import type { DeliveryJobData } from './queue.ts';

export type EventToSend = { id: string; type: string; body: Buffer };
export type ReceiverToSend = { id: string; url: string; secret: string | null; enabled: boolean };
export type Targets = { events: Map<string, EventToSend>; receivers: Map<string, ReceiverToSend> };

export async function loadTargets(pool: Pool, jobs: readonly DeliveryJobData[]): Promise<Targets> {
  const eventIds = [...new Set(jobs.map((j) => j.eventId))];
  const receiverIds = [...new Set(jobs.map((j) => j.receiverId))];
  const [events, receivers] = await Promise.all([
    pool.query<{ id: string; type: string; body: string }>({ name: 'webhook-load-events', text: 'select id, type, body from event where id = any($1::uuid[])', values: [eventIds] }),
    pool.query<ReceiverToSend>({ name: 'webhook-load-receivers', text: 'select id, url, secret, enabled from receiver where id = any($1::uuid[])', values: [receiverIds] }),
  ]);
  return {
    // Encoded once: these exact bytes are signed and sent.
    events: new Map(events.rows.map((e) => [e.id, { id: e.id, type: e.type, body: Buffer.from(e.body, 'utf8') }])),
    receivers: new Map(receivers.rows.map((r) => [r.id, r])),
  };
}
