// Dead letters: read (joined with events, receivers and attempts), taken for a replay, counted.
import type { Pool, PoolClient } from 'pg';
import { isoSql } from '../../db/iso-sql.ts';
import { BOSS_SCHEMA, DEAD_LETTER_QUEUE, type DeadLetterData } from './boss.ts';
import { bossInstalled } from './job-reads.ts';

// Dead letters, read as DeadLetterData whichever wrote them: pg-boss moves a job whose lost-worker
// retries ran out with the delivery job's own data ({..., attempt}), which is its last attempt and
// means worker_lost.
const DEAD_LETTER_DATA = `j.data->>'eventId' as "eventId", j.data->>'receiverId' as "receiverId",
  coalesce((j.data->>'attempts')::int, (j.data->>'attempt')::int) as attempts,
  coalesce(j.data->>'reason', case when j.data ? 'attempt' then 'worker_lost' end) as reason`;
const DEAD_LETTER_WHERE = `j.name = '${DEAD_LETTER_QUEUE}' and j.state = 'created' and ($1::text is null or j.data->>'receiverId' = $1)`;

export type DeadLetterRow = DeadLetterData & {
  eventType: string | null;
  receiverUrl: string | null;
  receiverEnabled: boolean | null;
  deadSince: string;
  lastStatusCode: number | null;
  lastError: string | null;
  lastAttemptAt: string | null;
};

/**
 * Dead letters (of one receiver, or all), oldest first, with the outcome of each delivery's last attempt.
 * Raw: joined with event, receiver and delivery_attempt in one statement; findJobs() cannot join.
 */
export async function selectDeadLetters(
  pool: Pool,
  receiverId: string | null,
  limit: number,
): Promise<DeadLetterRow[]> {
  // pg-boss installs its schema on its first start; before that there are no dead letters.
  if (!(await bossInstalled(pool))) return [];
  const { rows } = await pool.query<DeadLetterRow>(
    `select ${DEAD_LETTER_DATA}, e.type as "eventType", r.url as "receiverUrl", r.enabled as "receiverEnabled", ${isoSql('j.created_on')} as "deadSince",
            last.status_code as "lastStatusCode", last.error as "lastError", ${isoSql('last.started_at')} as "lastAttemptAt"
       from ${BOSS_SCHEMA}.job j
       left join event e on e.id = (j.data->>'eventId')::uuid
       left join receiver r on r.id = (j.data->>'receiverId')::uuid
       left join lateral (
         -- The letter's own last attempt: the one with its attempt count, made before it died (the
         -- same event may have gone to the same receiver since, by a redelivery, a replay or the
         -- catch-up of an enable, as attempt 1 again). None for a letter set aside unsent (0 attempts).
         select status_code, error, started_at from delivery_attempt a
          where a.event_id = e.id and a.receiver_id = r.id
            and a.attempt <= coalesce((j.data->>'attempts')::int, (j.data->>'attempt')::int)
          order by (a.attempt = coalesce((j.data->>'attempts')::int, (j.data->>'attempt')::int)) desc, (a.started_at <= j.created_on) desc, a.id desc
          limit 1) last on true
      where ${DEAD_LETTER_WHERE}
      order by j.created_on, j.id
      limit $2`,
    [receiverId, limit],
  );
  return rows;
}

/**
 * Deletes up to `limit` dead letters of enabled receivers through `client` (the caller's transaction)
 * and returns them. Materialized, so that the locked pick runs exactly once (pgboss.job is
 * partitioned; a plain IN (subquery ... limit) may be evaluated per partition and take more).
 * Raw: picks only enabled receivers' letters (a join) and deletes them in the caller's transaction.
 */
export async function takeDeadLetters(
  client: PoolClient,
  receiverId: string | null,
  limit: number,
  eventId: string | null = null,
): Promise<DeadLetterData[]> {
  const { rows } = await client.query<DeadLetterData>(
    `with picked as materialized (
       select j.id from ${BOSS_SCHEMA}.job j
         join receiver r on r.id = (j.data->>'receiverId')::uuid and r.enabled
        where ${DEAD_LETTER_WHERE} and ($3::text is null or j.data->>'eventId' = $3)
        order by j.created_on, j.id
        limit $2
        for update of j skip locked)
     delete from ${BOSS_SCHEMA}.job j where j.name = '${DEAD_LETTER_QUEUE}' and j.id in (select id from picked)
     returning ${DEAD_LETTER_DATA}`,
    [receiverId, limit, eventId],
  );
  return rows;
}

/** Raw: a count filtered by receiver (job data); getQueueStats() counts a whole queue, as of its last pass. */
export async function countDeadLetters(pool: Pool, receiverId: string | null): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    `select count(*) as n from ${BOSS_SCHEMA}.job j where ${DEAD_LETTER_WHERE}`,
    [receiverId],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * SQL subquery: the event ids (uuid, column `event_id`) of the dead letters of the receiver whose id
 * is the uuid expression `receiverSql`, for a resync's progress (catch-up/resync-sql.ts: a record whose
 * resync delivery was dead-lettered stays pending). Needs pg-boss installed (job-reads.ts bossInstalled).
 * Raw: joined by event id with the resync's rows in one statement; findJobs() cannot join.
 */
export const deadLetterEventsSql = (receiverSql: string) =>
  `select distinct (j.data->>'eventId')::uuid as event_id from ${BOSS_SCHEMA}.job j
    where j.name = '${DEAD_LETTER_QUEUE}' and j.state = 'created' and j.data->>'receiverId' = (${receiverSql})::text`;
