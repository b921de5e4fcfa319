// Operator actions on deliveries: send a stored event again, list dead letters, replay them. Every
// new delivery keeps the event id and the stored body; each attempt gets a fresh timestamp and
// signature (worker). Attempt numbers start again at 1 for a redelivered or replayed delivery.
// Replays never regress a receiver (docs/contract.md, "Delivery guarantees"): a delivery whose record already has a
// newer successful delivery to that receiver, or a newer one pending, is skipped and counted as
// superseded (an attempt row says so), unless `includeSuperseded`; a dead letter replayed is skipped
// too when the receiver already got its version (from a catch-up on enable, say). Either way
// it goes through its lane (queue/lanes.ts), behind any open delivery of the same record.
import type { Pool } from 'pg';
import type { PgBoss } from 'pg-boss';
import { AppError, badInput, notFound } from '../../kernel/errors.ts';
import { LEFT_VIEW_EVENT_TYPE } from '../../views/left-view.ts';
import {
  ENABLED_RECEIVERS_SQL,
  ROUTE_EVENT_COLUMNS,
  type RouteEventRow,
  type RouteReceiverRow,
  routeChanges,
  routeReceiver,
  storeAsides,
} from './view-routing.ts';
import { inTransaction } from '../../db/pg-transaction.ts';
import { REPLAY_PRIORITY } from '../queue/boss.ts';
import { enqueueOrdered, lockRecordsOfEvents } from '../queue/lanes.ts';
import { countDeadLetters, selectDeadLetters, takeDeadLetters } from '../queue/dead-letters.ts';
import { WEBHOOK_TEST_EVENT_TYPE } from './test-event.ts';

/**
 * `receiverIds`: the receivers it was queued for; `supersededReceiverIds` (`superseded` of them):
 * those not sent to because a newer delivery of the record supersedes this one.
 */
export type Redelivery = {
  eventId: string;
  eventType: string;
  receiverIds: string[];
  superseded: number;
  supersededReceiverIds: string[];
};

/** Enqueues `eventId` for one receiver, or for every enabled receiver that gets it (its types and view). */
export async function redeliverEvent(
  deps: { pool: Pool; boss: PgBoss },
  eventId: string,
  receiverId?: string,
  options: { includeSuperseded?: boolean } = {},
): Promise<Redelivery> {
  return await inTransaction(deps.pool, async (client) => {
    const event = (
      await client.query<RouteEventRow>(`select ${ROUTE_EVENT_COLUMNS} from event e where e.id = $1`, [eventId])
    ).rows[0];
    if (!event) throw notFound(`Event ${eventId}`);
    // A LEFT_VIEW event stands for one view: only a receiver named for it knows which.
    if (event.type === LEFT_VIEW_EVENT_TYPE && !receiverId)
      throw badInput([
        { name: 'receiver', reason: `a ${LEFT_VIEW_EVENT_TYPE} event is redelivered to one receiver: name it` },
      ]);
    // A test event goes to the receiver it was made for (its resource), never to every receiver.
    if (event.type === WEBHOOK_TEST_EVENT_TYPE) receiverId ??= event.resourceId;
    let deliveries: { eventId: string; receiverId: string }[];
    if (receiverId) {
      const receiver = (
        await client.query<{ enabled: boolean }>('select enabled from receiver where id = $1', [receiverId])
      ).rows[0];
      if (!receiver) throw notFound(`Receiver ${receiverId}`);
      // The receiver's state, not the argument, is what is wrong: exit 5 on the CLI (docs/operations.md), not 2.
      if (!receiver.enabled)
        throw new AppError('INVALID_STATE_TRANSITION', `Receiver ${receiverId} is disabled; enable it first`);
      deliveries = [{ eventId, receiverId }];
    } else {
      // Every enabled receiver that gets this event as the fan-out routes it (its types and view:
      // view-routing.ts); a receiver whose view the record left gets the LEFT_VIEW event of it.
      const receivers = (await client.query<RouteReceiverRow>(ENABLED_RECEIVERS_SQL)).rows.map(routeReceiver);
      const routed = routeChanges(receivers, [event]);
      await storeAsides((text, values) => client.query(text, values), routed.asides);
      deliveries = routed.deliveries;
    }
    await lockRecordsOfEvents((text, values) => client.query(text, values), [eventId]);
    const { superseded } = await enqueueOrdered((text, values) => client.query(text, values), deliveries, {
      replay: !options.includeSuperseded,
    });
    const skipped = new Set(superseded);
    return {
      eventId,
      eventType: event.type,
      receiverIds: deliveries.map((d) => d.receiverId).filter((id) => !skipped.has(id)),
      superseded: skipped.size,
      supersededReceiverIds: [...skipped],
    };
  });
}

export type DeadLetter = {
  eventId: string;
  eventType: string | null;
  receiverId: string;
  receiverUrl: string | null;
  receiverEnabled: boolean | null;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  lastAttemptAt: string | null;
  deadSince: string;
};

/** Dead letters, oldest first, with the outcome of each delivery's last attempt. */
export async function listDeadLetters(
  pool: Pool,
  options: { receiverId?: string; limit?: number } = {},
): Promise<DeadLetter[]> {
  if (options.receiverId) await requireReceiver(pool, options.receiverId);
  const rows = await selectDeadLetters(pool, options.receiverId ?? null, options.limit ?? 1000);
  return rows.map((r) => ({
    eventId: r.eventId,
    eventType: r.eventType,
    receiverId: r.receiverId,
    receiverUrl: r.receiverUrl,
    receiverEnabled: r.receiverEnabled,
    attempts: r.attempts,
    lastStatusCode: r.lastStatusCode,
    // A receiver disabled while the delivery waited has no failed attempt to show, only the reason.
    lastError: r.reason ?? (r.lastStatusCode !== null ? `HTTP ${r.lastStatusCode}` : r.lastError),
    lastAttemptAt: r.lastAttemptAt,
    deadSince: r.deadSince,
  }));
}

/**
 * Moves dead letters of enabled receivers back to the delivery queue (attempt 1, same event id), in
 * batches of `batchSize`, each one transaction, behind every other delivery (REPLAY_PRIORITY: a
 * large replay does not hold up the live deliveries to other receivers). Dead letters of disabled
 * receivers stay. An unknown `receiverId` or `eventId` is NOT_FOUND. With `eventId`, only that event's dead letters
 * (one, with `receiverId`: the console's "Replay").
 */
export async function replayDeadLetters(
  deps: { pool: Pool; boss: PgBoss },
  options: {
    receiverId?: string;
    eventId?: string;
    batchSize?: number;
    includeSuperseded?: boolean;
    onProgress?: (replayed: number) => void;
  } = {},
): Promise<{ replayed: number; superseded: number; remaining: number }> {
  const receiverId = options.receiverId ?? null;
  if (receiverId) await requireReceiver(deps.pool, receiverId);
  // Like the receiver: a mistyped event id is NOT_FOUND, not "0 replayed". Events that dead letters
  // need are kept by retention, so an event that is gone has none.
  if (options.eventId && !(await deps.pool.query('select 1 from event where id = $1', [options.eventId])).rowCount)
    throw notFound(`Event ${options.eventId}`);
  let replayed = 0;
  let superseded = 0;
  for (;;) {
    const moved = await inTransaction(deps.pool, async (client) => {
      const letters = await takeDeadLetters(client, receiverId, options.batchSize ?? 500, options.eventId ?? null);
      await lockRecordsOfEvents(
        (text, values) => client.query(text, values),
        letters.map((l) => l.eventId),
      );
      // A superseded letter leaves the dead letters too (its attempt row says `superseded`).
      const result = await enqueueOrdered(
        (text, values) => client.query(text, values),
        letters.map((l) => ({ eventId: l.eventId, receiverId: l.receiverId, priority: REPLAY_PRIORITY })),
        { replay: !options.includeSuperseded, skipDelivered: !options.includeSuperseded },
      );
      return { taken: letters.length, superseded: result.superseded.length };
    });
    if (moved.taken === 0) break;
    replayed += moved.taken - moved.superseded;
    superseded += moved.superseded;
    options.onProgress?.(replayed);
  }
  return { replayed, superseded, remaining: await countDeadLetters(deps.pool, receiverId) };
}

/** A filter naming a receiver that does not exist is a mistyped id (NOT_FOUND), not an empty result. */
async function requireReceiver(pool: Pool, receiverId: string): Promise<void> {
  const { rowCount } = await pool.query('select 1 from receiver where id = $1', [receiverId]);
  if (!rowCount) throw notFound(`Receiver ${receiverId}`);
}
