// Resync on demand (`receivers resync ID [--since T]`, GraphQL resyncWebhookReceiver, the console's
// "Resync"; receivers/receivers.ts resyncReceiver): a receiver that lost its copy gets the latest state
// of every record again, without walking the change feed.
// - which: with a time T, every record with an event of a type the receiver subscribes to from T on
//   (archived and deleted ones included: their removal is their latest state) and every published
//   record updated from T on; without, every published record. Found in one statement
//   (receiver_resync, its size visible at once).
// - what: as the catch-up (catch-up.ts): the record's newest event of a subscribed type, sent as
//   stored (type of its last change, newest resource.version, the record as the events render it),
//   also when the receiver had it before (its copy is gone), unless that very version is already on
//   its way to it in the record's lane. A published record with no stored event at all (retention
//   pruned them after EVENT_RETENTION_DAYS, or it was seeded without any) gets one made of its current
//   state (LEARNING_OPPORTUNITY_PUBLISHED at its current resource.version, outside the change feed:
//   resync-sql.ts). A record with nothing to send is skipped (counted): none of its events is of a
//   subscribed type, or it is archived or deleted and its events were pruned.
// - how: the catch-up's path (catch-up.ts queueLatestStates): batches of CATCH_UP_BATCH records, one
//   transaction each under the records' advisory locks as the catalog's writers take them, enqueued
//   through the lanes at the replays' lower priority. So per-record order holds: a live change of a
//   record made while its batch is queued is fanned out behind the record's resync delivery, in its
//   lane, and held no longer than that one delivery; other records and receivers are not held up.
//   The receiver's delivery mode applies as in the lanes (LATEST_STATE: a newer event replaces a resync
//   delivery still waiting).
// - one at a time per receiver: a resync being queued holds a session advisory lock (on a connection of
//   its own, in no transaction: it holds back no snapshot horizon), and one whose deliveries are still on
//   their way refuses a second (INVALID_STATE_TRANSITION). One cut short (the process stopped, or the
//   receiver was disabled meanwhile) is taken up by the next resync (its records not queued yet stay).
// - a disabled receiver is refused: `enable` sends it what it missed (its catch-up).
import type { Pool } from 'pg';
import { AppError, notFound } from '../../kernel/errors.ts';
import { inTransaction } from '../../db/pg-transaction.ts';
import { boundedQuery } from '../../db/bounded-query.ts';
import { setResyncReader } from '../../kernel/metrics.ts';
import { INSTALLED_SQL } from '../queue/job-reads.ts';
import { parseSince } from '../receivers/receiver-input.ts';
import { readReceiver, type ReceiverInfo } from '../receivers/receiver-reads.ts';
import { type CatchUpOptions, type CatchUpRun, queueLatestStates } from './catch-up.ts';
import {
  RESYNC_BATCH_SQL,
  RESYNC_FORGET_QUEUED_SQL,
  RESYNC_PICK_SQL,
  RESYNC_SENT_SQL,
  RESYNC_START_SQL,
  RESYNC_UNDERWAY_SQL,
  resyncCandidatesSql,
  resyncPendingSql,
} from './resync-sql.ts';
import { viewOfText } from '../delivery/view-routing.ts';
import { listEntryFacetsSql, viewSql } from '../../views/view-sql.ts';

export type ResyncOptions = CatchUpOptions & {
  /** Only the records changed from then on (their events); omitted or null: every published record. */
  since?: Date | null;
  /** Called once the resync's records are found, before any is queued (its size). */
  onStart?: (records: number) => void;
};

/** Of one resync: records found (with those left by one cut short), handed to the queue, and deliveries enqueued. */
export type ResyncRun = CatchUpRun & { found: number };

// The session advisory lock of a resync being queued: the two-key form (its own key space, apart
// from the records' one-key locks), the class and the receiver id hashed.
const TRY_LOCK_SQL = `select pg_try_advisory_lock(hashtext('receiver_resync'), hashtext($1)) as locked`;
const UNLOCK_SQL = `select pg_advisory_unlock(hashtext('receiver_resync'), hashtext($1))`;

/**
 * The refusal of a resync beside another one of the same receiver (INVALID_STATE_TRANSITION, a
 * sentence an operator can act on; the CLI exits 2 on it). A disabled receiver's refusal is a plain
 * INVALID_STATE_TRANSITION, as for a redelivery to it (the CLI exits 5).
 */
export class ResyncRunning extends AppError {
  constructor(detail: string) {
    super('INVALID_STATE_TRANSITION', detail);
  }
}

/** Finds and queues a resync of receiver `receiverId` (see the header); refuses one beside another or to a disabled receiver. */
export async function runResync(pool: Pool, receiverId: string, options: ResyncOptions = {}): Promise<ResyncRun> {
  const lock = await pool.connect();
  let locked = false;
  try {
    const receiver = (
      await lock.query<{ enabled: boolean }>('select enabled from receiver where id = $1', [receiverId])
    ).rows[0];
    if (!receiver) throw notFound(`Receiver ${receiverId}`);
    if (!receiver.enabled) throw disabled(receiverId);
    locked = (await lock.query<{ locked: boolean }>(TRY_LOCK_SQL, [receiverId])).rows[0]!.locked;
    if (!locked)
      throw new ResyncRunning(
        `A resync of receiver ${receiverId} is being queued right now (by another command or request): wait for it to end; \`receivers list\` shows its progress`,
      );
    const found = await inTransaction(pool, async (client) => {
      // Key share: the receiver cannot be removed meanwhile; a disable is not held up (each batch checks).
      const { rows } = await client.query<{ enabled: boolean; view: string | null }>(
        'select enabled, view from receiver where id = $1 for key share',
        [receiverId],
      );
      if (!rows[0]) throw notFound(`Receiver ${receiverId}`);
      if (!rows[0].enabled) throw disabled(receiverId);
      const underway = (await client.query<{ onTheWay: number }>(RESYNC_UNDERWAY_SQL, [receiverId])).rows[0]!;
      if (underway.onTheWay > 0)
        throw new ResyncRunning(
          `A resync of receiver ${receiverId} is still running: ${underway.onTheWay} of its deliveries are on their way; resync again once they are delivered (\`receivers list\` shows its progress)`,
        );
      await client.query(RESYNC_FORGET_QUEUED_SQL, [receiverId]);
      const view = viewOfText(rows[0].view);
      const values: unknown[] = [receiverId, options.since ?? null];
      const inView = view && viewSql(view, listEntryFacetsSql('le'), (v) => `$${values.push(v)}`);
      await client.query(resyncCandidatesSql(inView), values);
      await client.query(RESYNC_START_SQL, [receiverId, options.since ?? null]);
      const { rows: count } = await client.query<{ n: number }>(
        'select count(*)::int as n from receiver_resync where receiver_id = $1',
        [receiverId],
      );
      return count[0]!.n;
    });
    options.onStart?.(found);
    const run: ResyncRun = { records: 0, deliveries: 0, found };
    await queueLatestStates(
      pool,
      receiverId,
      { pick: RESYNC_PICK_SQL, batch: RESYNC_BATCH_SQL, sent: RESYNC_SENT_SQL },
      options,
      run,
    );
    return run;
  } finally {
    // A connection whose unlock failed is closed rather than pooled (its session lock goes with it).
    let broken = false;
    if (locked) await lock.query(UNLOCK_SQL, [receiverId]).catch(() => (broken = true));
    lock.release(broken);
  }
}

/**
 * The service function (receivers/receivers.ts exports it; the CLI, GraphQL and the console call it):
 * `since` as callers give it (an ISO 8601 date-time, receiver-input.ts parseSince), the resync run,
 * and the receiver with its progress.
 */
export async function resyncReceiver(
  deps: { pool: Pool },
  id: string,
  input: { since?: unknown } = {},
  options: Omit<ResyncOptions, 'since'> = {},
): Promise<ReceiverInfo & { run: ResyncRun }> {
  const since = parseSince(input.since);
  const run = await runResync(deps.pool, id, { ...options, since });
  return { ...(await readReceiver(deps.pool, id)), run };
}

const disabled = (receiverId: string) =>
  new AppError(
    'INVALID_STATE_TRANSITION',
    `Receiver ${receiverId} is disabled: enable it first (\`receivers enable\`); enabling sends it the latest state of every record it missed while disabled (its catch-up)`,
  );

/** Per receiver that had a resync, its records not delivered yet; bounded by `timeoutMs` (a scrape must not hang). */
export async function readResyncPending(
  pool: Pool,
  timeoutMs: number,
): Promise<{ receiverId: string; pending: number }[]> {
  const installed = (await boundedQuery(pool, INSTALLED_SQL, timeoutMs)).length > 0;
  return await boundedQuery<{ receiverId: string; pending: number }>(pool, resyncPendingSql(installed), timeoutMs);
}

/** Has this process's /metrics read the resync gauge from `pool` at scrape time. */
export function exportResyncGauge(pool: Pool, timeoutMs = 1000): void {
  setResyncReader(() => readResyncPending(pool, timeoutMs));
}
