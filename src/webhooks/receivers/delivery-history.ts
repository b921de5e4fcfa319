// A receiver's recent delivery health as a series: per hour, how many attempts were made and how many
// succeeded, for every receiver in one statement (the console's success-rate charts; GraphQL
// webhookDeliveryHistory). Read through the primary key, with no index on started_at to keep up on
// the hot path: ids grow with insertion, which follows the start of an attempt by at most a delivery
// timeout (seconds), so every attempt of the window has an id above the newest attempt that started
// an hour before the window (found by a backward seek). The cost is the window's attempts plus an
// hour's, not the table's; the window itself is exact (filtered on started_at).
import type { Pool } from 'pg';
import { badInput } from '../../kernel/errors.ts';
import { isoSql } from '../../db/iso-sql.ts';

export type DeliveryHour = { hour: string; attempts: number; successes: number };
export type ReceiverDeliveryHistory = { receiverId: string; hours: DeliveryHour[] };

export const HISTORY_HOURS_DEFAULT = 24;
export const HISTORY_HOURS_MAX = 168;

// $1: hours, the current (partial) hour included. Every receiver gets every hour, oldest first.
const HISTORY_SQL = `
  with since as (select date_trunc('hour', now(), 'UTC') - ($1::int - 1) * interval '1 hour' as t),
  floor as (select coalesce((select a.id from delivery_attempt a, since where a.started_at < since.t - interval '1 hour' order by a.id desc limit 1), 0) as id),
  counts as (
    select a.receiver_id, date_trunc('hour', a.started_at, 'UTC') as hour, count(*)::int as attempts, count(*) filter (where a.outcome = 'success')::int as successes
      from delivery_attempt a, since
     where a.id > (select id from floor) and a.started_at >= since.t
     group by 1, 2)
  select r.id as "receiverId",
         json_agg(json_build_object('hour', ${isoSql('h.hour')}, 'attempts', coalesce(c.attempts, 0), 'successes', coalesce(c.successes, 0)) order by h.hour) as hours
    from receiver r
   cross join since
   cross join lateral generate_series(since.t, since.t + ($1::int - 1) * interval '1 hour', interval '1 hour') h(hour)
    left join counts c on c.receiver_id = r.id and c.hour = h.hour
   group by r.id, r.created_at
   order by r.created_at, r.id`;

/** Every receiver's attempts and successes per hour over the last `hours` (1..168), oldest hour first. */
export async function readDeliveryHistory(
  pool: Pool,
  hours: number = HISTORY_HOURS_DEFAULT,
): Promise<ReceiverDeliveryHistory[]> {
  if (!Number.isInteger(hours) || hours < 1 || hours > HISTORY_HOURS_MAX)
    throw badInput([{ name: 'hours', reason: `must be an integer from 1 to ${HISTORY_HOURS_MAX}` }]);
  return (await pool.query<ReceiverDeliveryHistory>(HISTORY_SQL, [hours])).rows;
}
