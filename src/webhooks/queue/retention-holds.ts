// What retention must keep for the queue: events that open jobs or dead letters still reference (the
// worker will load their bodies), and the attempts of deliveries that are dead letters now (their
// history stays with them). Retention (retention/prune.ts) asks these per batch, through its own
// connection or transaction; both read pg-boss's job table, so call them only once pg-boss is
// installed (job-reads.ts bossInstalled).
// Raw: matched on job data across both queues in one statement; findJobs() reads one queue per call.
import type { Pool, PoolClient } from 'pg';
import { BOSS_SCHEMA, DEAD_LETTER_QUEUE, QUEUES_SQL } from './boss.ts';

type Db = Pick<Pool, 'query'> | Pick<PoolClient, 'query'>;

/** Of `eventIds`, those that an unsettled delivery job or a dead letter references, or that wait in a delivery lane (lanes.ts). */
export async function eventsHeldByJobs(db: Db, eventIds: readonly string[]): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const { rows } = await db.query<{ id: string }>(
    `select distinct j.data->>'eventId' as id from ${BOSS_SCHEMA}.job j
      where j.name in ${QUEUES_SQL} and j.state in ('created', 'retry', 'active') and j.data->>'eventId' = any($1::text[])
     union
     select w.id::text from delivery_lane l, unnest(l.waiting) as w (id)
      where l.head_job is not null and l.waiting && $1::uuid[] and w.id = any($1::uuid[])`,
    [eventIds],
  );
  return new Set(rows.map((r) => r.id));
}

/** A delivery (an event to a receiver) as deadLetterDeliveries keys it. */
export const deliveryKey = (d: { eventId: string; receiverId: string }) => `${d.eventId}/${d.receiverId}`;

/** Of `deliveries`, those that are dead letters now, by deliveryKey. */
export async function deadLetterDeliveries(
  db: Db,
  deliveries: readonly { eventId: string; receiverId: string }[],
): Promise<Set<string>> {
  if (deliveries.length === 0) return new Set();
  const { rows } = await db.query<{ eventId: string; receiverId: string }>(
    `select distinct j.data->>'eventId' as "eventId", j.data->>'receiverId' as "receiverId" from ${BOSS_SCHEMA}.job j
      where j.name = '${DEAD_LETTER_QUEUE}' and j.state = 'created'
        and (j.data->>'eventId', j.data->>'receiverId') in (select * from unnest($1::text[], $2::text[]))`,
    [deliveries.map((d) => d.eventId), deliveries.map((d) => d.receiverId)],
  );
  return new Set(rows.map(deliveryKey));
}
