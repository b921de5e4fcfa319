// Retention (docs/contract.md, "Retention"): delivery attempts older than
// DELIVERY_ATTEMPT_RETENTION_DAYS and events older than EVENT_RETENTION_DAYS are deleted in small
// batches, each batch one short transaction and one seek on an index:
// - attempts in primary-key order from the oldest, up to the first one inside the window (ids grow
//   with time), through the primary key; the history of a delivery that is a dead letter now stays.
// - events in feed order (event_feed_order) from the watermark, up to the first one inside the
//   window, and only below the feed's horizon (a transaction still open could add an event there).
//   The watermark (event_feed_pruned) moves past every event passed, so the retained feed stays one
//   contiguous range and an older cursor is answered 410. An event that a waiting delivery or a dead
//   letter still needs (the worker sends its stored body) is kept, with its attempts, below the
//   watermark: no longer in the feed, still deliverable; a later run deletes it once it is free.
// - test events (WEBHOOK_TEST, no feed position) older than EVENT_RETENTION_DAYS, with their attempts.
// What a delivery still needs is the queue's business: retention asks the queue room
// (webhooks/queue/retention-holds.ts) which events and attempts of a batch to keep.
// Also erases the previous signing secrets whose rotation grace has ended (webhooks/secrets/previous-secrets.ts).
// The scheduled job (prune-job.ts) and `npm run cli -- prune` both run pruneRetention.
import type { Pool, PoolClient } from 'pg';
import { inTransaction } from '../db/pg-transaction.ts';
import { bossInstalled } from '../webhooks/queue/job-reads.ts';
import { deadLetterDeliveries, deliveryKey, eventsHeldByJobs } from '../webhooks/queue/retention-holds.ts';
import { eraseExpiredPreviousSecrets } from '../webhooks/secrets/previous-secrets.ts';

export const PRUNE_BATCH_SIZE = 500;

export type PruneOptions = {
  eventDays: number;
  deliveryAttemptDays: number;
  batchSize?: number;
  onProgress?: (progress: PruneResult) => void;
};
export type PruneResult = {
  deliveryAttempts: number;
  events: number;
  eventsKept: number;
  batches: number;
  /** Previous signing secrets whose rotation grace had ended, erased (webhooks/secrets/previous-secrets.ts). */
  previousSecretsErased: number;
};

type Db = Pick<Pool, 'query'> | Pick<PoolClient, 'query'>;
/** Which of a batch's events (or deliveries) the queue still needs; nothing before pg-boss's first start. */
type Holds = {
  events: (db: Db, ids: string[]) => Promise<Set<string>>;
  deadLetters: (db: Db, deliveries: { eventId: string; receiverId: string }[]) => Promise<Set<string>>;
};
const NOTHING_HELD: Holds = { events: async () => new Set(), deadLetters: async () => new Set() };
const QUEUE_HOLDS: Holds = { events: eventsHeldByJobs, deadLetters: deadLetterDeliveries };

/** The rows of an ordered head up to (not including) the first one inside the window. */
function beforeWindow<T extends { inside: boolean }>(head: T[]): T[] {
  const stop = head.findIndex((r) => r.inside);
  return stop < 0 ? head : head.slice(0, stop);
}

// Attempts in primary-key order from `last`, each flagged when it is inside the window.
const ATTEMPTS_HEAD_SQL = `select id::text as id, event_id as "eventId", receiver_id as "receiverId", started_at >= now() - $3::int * interval '1 day' as inside
  from delivery_attempt where id > $1 order by delivery_attempt.id limit $2`;

/** One batch of attempts: the head from `last`, those before the window deleted unless a dead letter keeps them. */
async function pruneAttemptBatch(pool: Pool, holds: Holds, last: string, batch: number, days: number) {
  const { rows: head } = await pool.query<{ id: string; eventId: string; receiverId: string; inside: boolean }>(
    ATTEMPTS_HEAD_SQL,
    [last, batch, days],
  );
  const doomed = beforeWindow(head);
  const kept = await holds.deadLetters(pool, doomed);
  const gone = doomed.filter((a) => !kept.has(deliveryKey(a))).map((a) => a.id);
  const deleted = gone.length
    ? ((await pool.query('delete from delivery_attempt where id = any($1::bigint[])', [gone])).rowCount ?? 0)
    : 0;
  return { scanned: head.length, deleted, last: doomed.at(-1)?.id ?? null, stopped: doomed.length < head.length };
}

/** Deletes events `ids` with their attempts; returns how many events. */
async function deleteEvents(client: PoolClient, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  await client.query('delete from delivery_attempt where event_id = any($1::uuid[])', [ids]);
  return (await client.query('delete from event where id = any($1::uuid[])', [ids])).rowCount ?? 0;
}

/** An event's place in the feed, as text. */
type FeedPosition = { xid: string; position: string };

// Kept events below the watermark, in feed order from a cursor (their deliveries may have ended since).
const KEPT_PAGE_SQL = `select e.id, e.xid::text as xid, e.position::text as position from event e, event_feed_pruned w
  where (e.xid, e.position) <= (w.xid, w.position) and ($1::xid8 is null or (e.xid, e.position) > ($1::xid8, $2::bigint))
  order by e.xid, e.position limit $3`;

/** One page of kept events below the watermark: those no delivery needs any more are deleted. */
async function releaseKeptPage(
  client: PoolClient,
  holds: Holds,
  after: FeedPosition | null,
  batch: number,
): Promise<{ deleted: number; next: FeedPosition | null }> {
  const { rows: page } = await client.query<{ id: string; xid: string; position: string }>(KEPT_PAGE_SQL, [
    after?.xid ?? null,
    after?.position ?? null,
    batch,
  ]);
  const held = await holds.events(
    client,
    page.map((e) => e.id),
  );
  const deleted = await deleteEvents(
    client,
    page.filter((e) => !held.has(e.id)).map((e) => e.id),
  );
  return { deleted, next: page.length < batch ? null : page.at(-1)! };
}

// Events after the watermark, in feed order, below the feed's horizon, each flagged when it is inside the window.
const EVENTS_HEAD_SQL = `select e.id, e.occurred_at >= now() - $2::int * interval '1 day' as inside from event e, event_feed_pruned w
  where (e.xid, e.position) > (w.xid, w.position) and e.xid < pg_snapshot_xmin(pg_current_snapshot())
  order by e.xid, e.position limit $1`;

/** One batch of events: the head after the watermark; those before the window are passed (the watermark moves past them) and deleted unless a delivery keeps them. */
async function pruneEventBatch(client: PoolClient, holds: Holds, batch: number, days: number) {
  const { rows: head } = await client.query<{ id: string; inside: boolean }>(EVENTS_HEAD_SQL, [batch, days]);
  const doomed = beforeWindow(head);
  const last = doomed.at(-1);
  if (last)
    await client.query(
      'update event_feed_pruned p set xid = e.xid, position = e.position from event e where e.id = $1',
      [last.id],
    );
  const held = await holds.events(
    client,
    doomed.map((e) => e.id),
  );
  const deleted = await deleteEvents(
    client,
    doomed.filter((e) => !held.has(e.id)).map((e) => e.id),
  );
  return { scanned: head.length, passed: doomed.length, deleted, stopped: doomed.length < head.length };
}

// Test events (WEBHOOK_TEST, webhooks/delivery/test-event.ts) have no feed position: past
// EVENT_RETENTION_DAYS they go with their attempts, found through their own index (event_test_events).
const TEST_EVENTS_SQL = `select e.id from event e where e.xid is null and e.occurred_at < now() - $2::int * interval '1 day' order by e.occurred_at limit $1`;

/** One batch of old test events: deleted unless a delivery still holds them; how many were looked at and deleted. */
async function pruneTestEventBatch(client: PoolClient, holds: Holds, batch: number, days: number) {
  const { rows } = await client.query<{ id: string }>(TEST_EVENTS_SQL, [batch, days]);
  const held = await holds.events(
    client,
    rows.map((e) => e.id),
  );
  return {
    scanned: rows.length,
    deleted: await deleteEvents(
      client,
      rows.filter((e) => !held.has(e.id)).map((e) => e.id),
    ),
  };
}

export async function pruneRetention(pool: Pool, options: PruneOptions): Promise<PruneResult> {
  const batch = options.batchSize ?? PRUNE_BATCH_SIZE;
  const result: PruneResult = {
    deliveryAttempts: 0,
    events: 0,
    eventsKept: 0,
    batches: 0,
    previousSecretsErased: await eraseExpiredPreviousSecrets(pool),
  };
  const report = () => options.onProgress?.({ ...result });
  // pg-boss creates its tables on its first start; before that, no delivery holds anything.
  const holds = (await bossInstalled(pool)) ? QUEUE_HOLDS : NOTHING_HELD;

  if (options.deliveryAttemptDays > 0) {
    for (let last = '0'; ;) {
      const row = await pruneAttemptBatch(pool, holds, last, batch, options.deliveryAttemptDays);
      result.deliveryAttempts += row.deleted;
      result.batches++;
      report();
      if (row.stopped || row.last === null || row.scanned < batch) break;
      last = row.last;
    }
  }

  if (options.eventDays > 0) {
    // One pruner at a time (the job on several workers, the CLI): each batch locks the watermark row
    // first, and its statements then read in snapshots taken after the previous batch committed.
    const locked = <T>(work: (client: PoolClient) => Promise<T>) =>
      inTransaction(pool, async (client) => {
        await client.query('select 1 from event_feed_pruned for update');
        return await work(client);
      });
    let after: FeedPosition | null = null;
    do {
      const from: FeedPosition | null = after;
      const page: { deleted: number; next: FeedPosition | null } = await locked((client) =>
        releaseKeptPage(client, holds, from, batch),
      );
      result.events += page.deleted;
      after = page.next;
    } while (after);
    for (;;) {
      const row = await locked((client) => pruneEventBatch(client, holds, batch, options.eventDays));
      result.events += row.deleted;
      result.eventsKept += row.passed - row.deleted;
      result.batches++;
      report();
      if (row.stopped || row.scanned < batch) break;
    }
    for (;;) {
      const row = await inTransaction(pool, (client) => pruneTestEventBatch(client, holds, batch, options.eventDays));
      result.events += row.deleted;
      // Held ones stay in the head of the next batch: stop when a batch deletes fewer than it read.
      if (row.scanned < batch || row.deleted < row.scanned) break;
    }
  }
  return result;
}
