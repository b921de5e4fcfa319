// A receiver's jobs in both queues, and the deliveries waiting in its lanes behind them (lanes.ts):
// removed with the receiver, and counted for the receiver reads (receivers/receiver-reads.ts asks for
// the counts; the statement counting them is this folder's alone).
import type { Pool, PoolClient } from 'pg';
import type { Db } from 'pg-boss';
import { BOSS_SCHEMA, DEAD_LETTER_QUEUE, DELIVERY_QUEUE, QUEUES_SQL } from './boss.ts';
import { INSTALLED_SQL } from './job-reads.ts';
import { waitingInLanesSql } from './lane-reads.ts';

/**
 * Deletes a receiver's waiting deliveries and dead letters through `db` (the caller's transaction); returns how many.
 * Raw: selected by job data across both queues; deleteJob() takes ids.
 */
export async function removeReceiverJobs(db: Db, receiverId: string): Promise<number> {
  // pg-boss installs its schema on its first start; before that there is nothing to remove.
  const { rows: installed } = await db.executeSql(INSTALLED_SQL);
  if (installed.length === 0) return 0;
  const { rows } = await db.executeSql(
    `with removed as (delete from ${BOSS_SCHEMA}.job where name in ($1, $2) and state < 'active' and data->>'receiverId' = $3 returning 1),
          lanes as (delete from delivery_lane where receiver_id = $3::uuid returning cardinality(waiting) as waiting)
     select (select count(*)::int from removed) + (select coalesce(sum(waiting), 0)::int from lanes) as n`,
    [DELIVERY_QUEUE, DEAD_LETTER_QUEUE, receiverId],
  );
  return rows[0].n as number;
}

/**
 * SQL subquery: per receiver (`receiver_id`, text), its waiting deliveries (not yet in flight) and its
 * dead letters, of the receiver whose id is in the parameter `receiverParam` (e.g. '$1'), or of all
 * when that parameter is null.
 * Raw: every receiver's counts in one statement; pg-boss counts per queue, not per job data.
 */
function deliveryCountsByReceiverSql(receiverParam: string): string {
  return `select receiver_id, sum(waiting)::int as waiting, sum(dead)::int as dead from (
            select data->>'receiverId' as receiver_id,
                   count(*) filter (where name = '${DELIVERY_QUEUE}' and state < 'active')::int as waiting,
                   count(*) filter (where name = '${DEAD_LETTER_QUEUE}' and state = 'created')::int as dead
              from ${BOSS_SCHEMA}.job
             where name in ${QUEUES_SQL} and state < 'active' and (${receiverParam}::text is null or data->>'receiverId' = ${receiverParam})
             group by 1
            union all
            select receiver_id, waiting, 0 from (${waitingInLanesSql(receiverParam)}) l) counts
           group by receiver_id`;
}

/** A receiver's deliveries: waiting (not yet in flight, in the queue or behind a lane's head) and dead letters. */
export type DeliveryCounts = { waiting: number; dead: number };

/**
 * Per receiver id, its DeliveryCounts: of `receiverId`, or of every receiver when null, in one
 * statement grouped over the job table (a receiver with none is absent). pg-boss's schema must be
 * installed (job-reads.ts bossInstalled).
 */
export async function deliveryCountsByReceiver(
  db: Pick<Pool, 'query'> | Pick<PoolClient, 'query'>,
  receiverId: string | null,
): Promise<Map<string, DeliveryCounts>> {
  const { rows } = await db.query<DeliveryCounts & { receiver_id: string }>(
    `select * from (${deliveryCountsByReceiverSql('$1')}) c`,
    [receiverId],
  );
  return new Map(rows.map((r) => [r.receiver_id, { waiting: r.waiting, dead: r.dead }]));
}
