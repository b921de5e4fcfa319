// Retention (CONTRACT.md sections 7 and 10): delivery attempts older than
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
// - test events (no feed position) older than EVENT_RETENTION_DAYS, with their attempts.
// The scheduled job (prune-job.ts) and `npm run cli -- prune` both run pruneRetention.
import type { Pool } from 'pg';
import { inTransaction } from '../webhooks/pg-transaction.ts';
import { bossInstalled, deadLetterAttemptCondition, eventHeldCondition } from '../webhooks/queue.ts';

export const PRUNE_BATCH_SIZE = 500;

export type PruneOptions = { eventDays: number; deliveryAttemptDays: number; batchSize?: number; onProgress?: (progress: PruneResult) => void };
export type PruneResult = { deliveryAttempts: number; events: number; eventsKept: number; batches: number };

const attemptsSql = (deadLetter: string) => `
  with head as (select id, started_at from delivery_attempt where id > $1 order by id limit $2),
       stop as (select min(id) as id from head where started_at >= now() - $3::int * interval '1 day'),
       doomed as (select id from head where id < coalesce((select id from stop), 9223372036854775807)),
       deleted as (delete from delivery_attempt a using doomed d where a.id = d.id and not ${deadLetter} returning a.id)
  select (select count(*) from head)::int as scanned, (select count(*) from deleted)::int as deleted,
         (select max(id) from doomed)::text as last, (select id from stop) is not null as stopped`;

// Kept events below the watermark whose deliveries have ended since (replayed, removed).
const releasedSql = (held: string) => `
  with gone as (select e.id from event e, event_feed_pruned w
                 where (e.xid, e.position) <= (w.xid, w.position) and not ${held} limit $1),
       attempts as (delete from delivery_attempt where event_id in (select id from gone)),
       deleted as (delete from event where id in (select id from gone) returning id)
  select count(*)::int as deleted from deleted`;

// Test events (WEBHOOK_TEST, webhooks/test-event.ts) have no feed position: past EVENT_RETENTION_DAYS
// they go with their attempts, found through their own index (event_test_events), unless still held.
const testEventsSql = (held: string) => `
  with gone as (select e.id from event e where e.xid is null and e.occurred_at < now() - $2::int * interval '1 day' and not ${held} limit $1),
       attempts as (delete from delivery_attempt where event_id in (select id from gone)),
       deleted as (delete from event where id in (select id from gone) returning id)
  select count(*)::int as deleted from deleted`;

const eventsSql = (held: string) => `
  with w as (select xid, position from event_feed_pruned),
       head as (select e.id, e.xid, e.position, e.occurred_at from event e, w
                 where (e.xid, e.position) > (w.xid, w.position) and e.xid < pg_snapshot_xmin(pg_current_snapshot())
                 order by e.xid, e.position limit $1),
       stop as (select xid, position from head where occurred_at >= now() - $2::int * interval '1 day' order by xid, position limit 1),
       doomed as (select h.* from head h where not exists (select 1 from stop s where (h.xid, h.position) >= (s.xid, s.position))),
       gone as (select e.id from doomed e where not ${held}),
       attempts as (delete from delivery_attempt where event_id in (select id from gone)),
       deleted as (delete from event where id in (select id from gone) returning id),
       last as (select xid, position from doomed order by xid desc, position desc limit 1),
       moved as (update event_feed_pruned p set xid = last.xid, position = last.position from last returning 1)
  select (select count(*) from head)::int as scanned, (select count(*) from doomed)::int as passed,
         (select count(*) from deleted)::int as deleted, exists (select 1 from stop) as stopped, (select count(*) from moved)::int as moved`;

export async function pruneRetention(pool: Pool, options: PruneOptions): Promise<PruneResult> {
  const batch = options.batchSize ?? PRUNE_BATCH_SIZE;
  const result: PruneResult = { deliveryAttempts: 0, events: 0, eventsKept: 0, batches: 0 };
  const report = () => options.onProgress?.({ ...result });
  // pg-boss creates its tables on its first start; before that, no delivery holds anything.
  const installed = await bossInstalled(pool);
  const nothingHeld = 'false';

  if (options.deliveryAttemptDays > 0) {
    const sql = attemptsSql(installed ? deadLetterAttemptCondition('a') : nothingHeld);
    for (let last = '0'; ; ) {
      const { rows } = await pool.query<{ scanned: number; deleted: number; last: string | null; stopped: boolean }>(sql, [last, batch, options.deliveryAttemptDays]);
      const row = rows[0]!;
      result.deliveryAttempts += row.deleted;
      result.batches++;
      report();
      if (row.stopped || row.last === null || row.scanned < batch) break;
      last = row.last;
    }
  }

  if (options.eventDays > 0) {
    const held = installed ? eventHeldCondition('e') : nothingHeld;
    // One pruner at a time (the job on several workers, the CLI): each batch locks the watermark row
    // first, and its statement then reads in a snapshot taken after the previous batch committed.
    const locked = <T>(work: (query: (sql: string, values: unknown[]) => Promise<T>) => Promise<T>) =>
      inTransaction(pool, async (client) => {
        await client.query('select 1 from event_feed_pruned for update');
        return await work(async (sql, values) => (await client.query(sql, values)).rows[0] as T);
      });
    for (;;) {
      const row = await locked<{ deleted: number }>((query) => query(releasedSql(held), [batch]));
      result.events += row.deleted;
      if (row.deleted < batch) break;
    }
    for (;;) {
      const row = await locked<{ scanned: number; passed: number; deleted: number; stopped: boolean }>((query) => query(eventsSql(held), [batch, options.eventDays]));
      result.events += row.deleted;
      result.eventsKept += row.passed - row.deleted;
      result.batches++;
      report();
      if (row.stopped || row.scanned < batch) break;
    }
    for (;;) {
      const { rows } = await pool.query<{ deleted: number }>(testEventsSql(held), [batch, options.eventDays]);
      result.events += rows[0]!.deleted;
      if (rows[0]!.deleted < batch) break;
    }
  }
  return result;
}
