// Operator actions on deliveries: send a stored event again, list dead letters, replay them. Every
// new delivery keeps the event id and the stored body; each attempt gets a fresh timestamp and
// signature (worker). Attempt numbers start again at 1 for a redelivered or replayed delivery.
import type { Pool } from 'pg';
import type { PgBoss } from 'pg-boss';
import { badInput, notFound } from '../errors.ts';
import { isoSql } from './attempt-reads.ts';
import { enqueueDeliveries, SUBSCRIBED_RECEIVERS_SQL } from './enqueue.ts';
import { inTransaction } from './pg-transaction.ts';
import { BOSS_SCHEMA, DEAD_LETTER_QUEUE, type DeadLetterData } from './queue.ts';

export type Redelivery = { eventId: string; eventType: string; receiverIds: string[] };

/** Enqueues `eventId` for one receiver, or for every enabled receiver subscribed to its type. */
export async function redeliverEvent(deps: { pool: Pool; boss: PgBoss }, eventId: string, receiverId?: string): Promise<Redelivery> {
  return await inTransaction(deps.pool, async (client, db) => {
    const event = (await client.query<{ type: string }>('select type from event where id = $1', [eventId])).rows[0];
    if (!event) throw notFound(`Event ${eventId}`);
    let receiverIds: string[];
    if (receiverId) {
      const receiver = (await client.query<{ enabled: boolean }>('select enabled from receiver where id = $1', [receiverId])).rows[0];
      if (!receiver) throw notFound(`Receiver ${receiverId}`);
      if (!receiver.enabled) throw badInput([{ name: 'receiver', reason: `receiver ${receiverId} is disabled; enable it first` }]);
      receiverIds = [receiverId];
    } else {
      receiverIds = (await client.query<{ id: string }>(SUBSCRIBED_RECEIVERS_SQL, [event.type])).rows.map((r) => r.id);
    }
    await enqueueDeliveries(deps.boss, db, receiverIds.map((id) => ({ eventId, receiverId: id, attempt: 1 })));
    return { eventId, eventType: event.type, receiverIds };
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

const DEAD_LETTERS_SQL = `
  select j.data->>'eventId' as "eventId", e.type as "eventType", j.data->>'receiverId' as "receiverId",
         r.url as "receiverUrl", r.enabled as "receiverEnabled", (j.data->>'attempts')::int as attempts,
         j.data->>'reason' as reason, ${isoSql('j.created_on')} as "deadSince",
         last.status_code as "lastStatusCode", last.error as "lastError", ${isoSql('last.started_at')} as "lastAttemptAt"
    from ${BOSS_SCHEMA}.job j
    left join event e on e.id = (j.data->>'eventId')::uuid
    left join receiver r on r.id = (j.data->>'receiverId')::uuid
    left join lateral (
      select status_code, error, started_at from delivery_attempt a
       where a.event_id = e.id and a.receiver_id = r.id
       order by a.id desc limit 1) last on true
   where j.name = $1 and j.state = 'created' and ($2::text is null or j.data->>'receiverId' = $2)
   order by j.created_on, j.id
   limit $3`;

/** Dead letters, oldest first, with the outcome of each delivery's last attempt. */
export async function listDeadLetters(pool: Pool, options: { receiverId?: string; limit?: number } = {}): Promise<DeadLetter[]> {
  if (options.receiverId) await requireReceiver(pool, options.receiverId);
  // pg-boss installs its schema on its first start; before that there are no dead letters.
  const installed = await pool.query(`select 1 where to_regclass('${BOSS_SCHEMA}.job') is not null`);
  if (!installed.rowCount) return [];
  const { rows } = await pool.query(DEAD_LETTERS_SQL, [DEAD_LETTER_QUEUE, options.receiverId ?? null, options.limit ?? 1000]);
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

// Materialized, so that the locked pick runs exactly once (pgboss.job is partitioned; a plain
// IN (subquery ... limit) may be evaluated per partition and take more than the batch).
const TAKE_DEAD_LETTERS_SQL = `
  with picked as materialized (
    select j.id from ${BOSS_SCHEMA}.job j
      join receiver r on r.id = (j.data->>'receiverId')::uuid and r.enabled
     where j.name = $1 and j.state = 'created' and ($2::text is null or j.data->>'receiverId' = $2)
     order by j.created_on, j.id
     limit $3
     for update of j skip locked)
  delete from ${BOSS_SCHEMA}.job where name = $1 and id in (select id from picked)
  returning data`;

/**
 * Moves dead letters of enabled receivers back to the delivery queue (attempt 1, same event id), in
 * batches of `batchSize`, each one transaction. Dead letters of disabled receivers stay.
 */
export async function replayDeadLetters(
  deps: { pool: Pool; boss: PgBoss },
  options: { receiverId?: string; batchSize?: number; onProgress?: (replayed: number) => void } = {},
): Promise<{ replayed: number; remaining: number }> {
  if (options.receiverId) await requireReceiver(deps.pool, options.receiverId);
  let replayed = 0;
  for (;;) {
    const moved = await inTransaction(deps.pool, async (client, db) => {
      const { rows } = await client.query<{ data: DeadLetterData }>(TAKE_DEAD_LETTERS_SQL, [DEAD_LETTER_QUEUE, options.receiverId ?? null, options.batchSize ?? 500]);
      await enqueueDeliveries(deps.boss, db, rows.map(({ data }) => ({ eventId: data.eventId, receiverId: data.receiverId, attempt: 1 })));
      return rows.length;
    });
    if (moved === 0) break;
    replayed += moved;
    options.onProgress?.(replayed);
  }
  const { rows } = await deps.pool.query<{ n: string }>(
    `select count(*) as n from ${BOSS_SCHEMA}.job where name = $1 and state = 'created' and ($2::text is null or data->>'receiverId' = $2)`,
    [DEAD_LETTER_QUEUE, options.receiverId ?? null],
  );
  return { replayed, remaining: Number(rows[0]?.n ?? 0) };
}

/** A filter naming a receiver that does not exist is a mistyped id (NOT_FOUND), not an empty result. */
async function requireReceiver(pool: Pool, receiverId: string): Promise<void> {
  const { rowCount } = await pool.query('select 1 from receiver where id = $1', [receiverId]);
  if (!rowCount) throw notFound(`Receiver ${receiverId}`);
}
