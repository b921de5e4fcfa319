// "Send test event" (docs/console.md; `receivers test ID`, GraphQL sendTestWebhookEvent): a
// WEBHOOK_TEST event for one receiver, delivered like any event (same headers, signing, retries and
// attempt rows: the worker sends the stored body) to that receiver only, whatever its subscription.
// It is stored without a feed position (migration webhook_test_events), so it never enters the
// change feed, and `events list` leaves it out unless asked for by type.
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import type { PgBoss } from 'pg-boss';
import { WEBHOOK_TEST_EVENT_TYPE } from '@lods/receiver-kit';
import { AppError, notFound } from '../../kernel/errors.ts';
import { inTransaction } from '../../db/pg-transaction.ts';
import { enqueueDeliveries } from '../queue/boss.ts';

export { WEBHOOK_TEST_EVENT_TYPE };

export type TestDelivery = {
  eventId: string;
  eventType: typeof WEBHOOK_TEST_EVENT_TYPE;
  receiverId: string;
  occurredAt: string;
};

/** The delivery body: `data` null, the resource is the receiver itself. */
export function renderTestEventBody(event: { id: string; occurredAt: Date; receiverId: string }): string {
  return JSON.stringify({
    id: event.id,
    type: WEBHOOK_TEST_EVENT_TYPE,
    occurredAt: event.occurredAt.toISOString(),
    resource: { type: 'WEBHOOK_RECEIVER', id: event.receiverId },
    data: null,
  });
}

// xid and position null: not in the feed (the migration's check admits null only for this type).
const INSERT_TEST_EVENT = `insert into event (id, type, resource_id, occurred_at, body, xid, position) values ($1, $2, $3, $4, $5, null, null)`;

/** Stores a test event for `receiverId` and queues its delivery, in one transaction. A disabled receiver is refused (nothing would be sent). */
export async function sendTestEvent(deps: { pool: Pool; boss: PgBoss }, receiverId: string): Promise<TestDelivery> {
  return await inTransaction(deps.pool, async (client, db) => {
    const receiver = (
      await client.query<{ enabled: boolean }>('select enabled from receiver where id = $1 for key share', [receiverId])
    ).rows[0];
    if (!receiver) throw notFound(`Receiver ${receiverId}`);
    if (!receiver.enabled)
      throw new AppError('INVALID_STATE_TRANSITION', `Receiver ${receiverId} is disabled; enable it first`);
    const id = randomUUID();
    const occurredAt = new Date();
    await client.query(INSERT_TEST_EVENT, [
      id,
      WEBHOOK_TEST_EVENT_TYPE,
      receiverId,
      occurredAt,
      renderTestEventBody({ id, occurredAt, receiverId }),
    ]);
    await enqueueDeliveries(deps.boss, db, [{ eventId: id, receiverId, attempt: 1 }]);
    return { eventId: id, eventType: WEBHOOK_TEST_EVENT_TYPE, receiverId, occurredAt: occurredAt.toISOString() };
  });
}
