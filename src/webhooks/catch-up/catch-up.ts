// Catch-up on enable. A disabled receiver is left out of the fan-out (delivery/fan-out.ts), and its
// waiting deliveries become dead letters; enabled again, it would get only what changes from then on.
// So `enable` (receivers/receivers.ts enableReceiver: the CLI, GraphQL and the console share it)
// gives it, before anything newer of the same record, one delivery of the latest state of every
// record it missed:
// - which: the records with an event of a type it subscribes to from `receiver.catch_up_from` on
//   (the horizon when it was disabled, set by a trigger, migration receiver_catch_up), and those whose
//   last queued delivery never arrived (set aside as a dead letter when it was disabled, or
//   dead-lettered after failures); of these, each one whose latest subscribed version was never
//   queued to it, or was queued and is neither delivered nor pending (its lane, queue/lanes.ts). Found
//   in one statement over the event log, in the enabling transaction (receiver_catch_up, its size
//   visible at once).
// - what: the record's newest event of a subscribed type, sent as stored: its body carries the type
//   of the last change (ARCHIVED/DELETED for removals), the newest resource.version and the record's
//   public rendering as the events render it (events/event-body.ts); nothing is rendered again.
// - how: in batches (CATCH_UP_BATCH records, one transaction each, so the queue and the writers wait
//   for at most one batch), each holding its records' advisory locks as the catalog's writers take
//   them, and enqueued through the lanes like any delivery (one enqueueing statement per batch), at
//   the replays' lower priority: a live change made after the enable is fanned out behind the
//   record's catch-up delivery in its lane, and a large catch-up does not hold up other receivers'
//   deliveries. The receiver's delivery mode applies as in the lanes (LATEST_STATE: a newer event
//   replaces a catch-up delivery still waiting).
// - the window: a writer whose fan-out ran before the enable committed, and which committed after
//   the enabling transaction looked, missed the receiver too. Once every transaction open at the
//   enable has ended (waited for, at most CATCH_UP_SETTLE_MS), a sweep looks again from the enabling
//   statement's horizon and queues what it finds; then `catch_up_from` is cleared.
// A catch-up cut short (the process stopped) is resumed by the next `enable` (also of an enabled
// receiver); one disabled again stops after its batch, and the next enable takes up the rest.
import type { Pool, PoolClient } from 'pg';
import { boundedQuery } from '../../db/bounded-query.ts';
import { inTransaction } from '../../db/pg-transaction.ts';
import { setCatchUpReader } from '../../kernel/metrics.ts';
import { ROUTING_LOCK_SHARED_SQL } from '../../db/routing-lock.ts';
import { REPLAY_PRIORITY } from '../queue/boss.ts';
import { bossInstalled } from '../queue/job-reads.ts';
import { enqueueOrdered } from '../queue/lanes.ts';
import { RECEIVER_SQL, type RouteReceiver, type RouteReceiverRow, routeReceiver } from '../delivery/view-routing.ts';
import { routeLatestStates } from './latest-state-routes.ts';
import {
  BATCH_SQL,
  CANDIDATES_SQL,
  FINISH_SQL,
  FORGET_QUEUED_SQL,
  PENDING_SQL,
  PICK_SQL,
  START_SQL,
  STILL_OPEN_SQL,
} from './catch-up-sql.ts';

/** Records per batch (one transaction, one enqueueing statement). */
export const CATCH_UP_BATCH = 500;
/** How long the sweep waits for the transactions open at the enable to end. */
export const CATCH_UP_SETTLE_MS = 2000;

export type CatchUpOptions = {
  /** Send every record's state under a fresh event id (a view change: view-routing.ts restated). */
  restate?: boolean;
  batchSize?: number;
  settleMs?: number;
  /** Told the records handed to the queue so far, after each batch (awaited before the next). */
  onProgress?: (records: number) => void | Promise<void>;
};

/** Of one run: records handed to the queue, and the deliveries that took (a record not missed any more needs none). */
export type CatchUpRun = { records: number; deliveries: number };

/**
 * In the enabling transaction, after the receiver's row was set enabled by it: replaces the
 * receiver's previous catch-up (its rows not queued yet stay) with the records it missed. Returns
 * how many were added.
 */
export async function startCatchUp(client: PoolClient, receiverId: string): Promise<number> {
  await client.query(FORGET_QUEUED_SQL, [receiverId]);
  const { rows } = await client.query<{ xmin: string; added: number }>(CANDIDATES_SQL, [receiverId, true]);
  await client.query(START_SQL, [receiverId, rows[0]!.xmin]);
  return rows[0]!.added;
}

/** After the enabling transaction committed: queues the catch-up's records, then sweeps (see the header). */
export async function runCatchUp(pool: Pool, receiverId: string, options: CatchUpOptions = {}): Promise<CatchUpRun> {
  const openAtStart = (await pool.query<{ s: string }>('select pg_current_snapshot()::text as s')).rows[0]!.s;
  const run: CatchUpRun = { records: 0, deliveries: 0 };
  await queueAll(pool, receiverId, options, run);
  const { rows } = await pool.query<{ from: string | null; enabled: boolean }>(
    'select catch_up_from::text as from, enabled from receiver where id = $1',
    [receiverId],
  );
  const from = rows[0]?.enabled ? rows[0].from : null;
  if (from === null) return run;
  const settled = await waitUntilEnded(pool, openAtStart, options.settleMs ?? CATCH_UP_SETTLE_MS);
  await inTransaction(pool, async (client) => {
    const swept = (await client.query<{ xmin: string }>(CANDIDATES_SQL, [receiverId, false])).rows[0]!;
    // Not settled: a transaction open at the enable may still commit an event the receiver missed;
    // the next enable looks again from this sweep's horizon.
    await client.query(FINISH_SQL, [receiverId, from, settled ? null : swept.xmin]);
  });
  await queueAll(pool, receiverId, options, run);
  return run;
}

async function queueAll(pool: Pool, receiverId: string, options: CatchUpOptions, run: CatchUpRun): Promise<void> {
  await queueLatestStates(pool, receiverId, { pick: PICK_SQL, batch: BATCH_SQL }, options, run);
}

/**
 * The statements of one kind of latest-state sending (the catch-up's here, the resync's in
 * resync-sql.ts): `pick` ($1 receiver id, $2 batch size) locks the next rows to queue and takes their
 * records' advisory locks (pickSql); `batch` ($1 receiver id, $2 the picked record ids) marks them
 * queued and returns, per record, `enabled` (false on every row: the receiver was disabled, nothing
 * marked), `eventId` and `missed` (whether that event is to be enqueued).
 */
export type LatestStateStatements = {
  pick: string;
  batch: string;
  /**
   * $1 receiver id, $2 resource ids, $3 event ids, $4 versions: what was sent for each record when
   * routing replaced its event (a LEFT_VIEW, a restatement), recorded where the progress reads it.
   */
  sent?: string;
};

/**
 * Queues the rows `statements` pick, a batch (`options.batchSize`, default CATCH_UP_BATCH) per
 * transaction under the records' advisory locks, each batch's deliveries enqueued through the lanes in
 * one statement at the replays' priority; stops when none is left, or the receiver is gone or disabled
 * (the rest stays for the next run). Adds to `run` and reports after each batch (`options.onProgress`).
 */
export async function queueLatestStates(
  pool: Pool,
  receiverId: string,
  statements: LatestStateStatements,
  options: CatchUpOptions,
  run: CatchUpRun,
): Promise<void> {
  // pg-boss installs its schema on its first start; until then the rows wait for the next enable.
  if (!(await bossInstalled(pool))) return;
  const size = options.batchSize ?? CATCH_UP_BATCH;
  for (;;) {
    const batch = await inTransaction(pool, async (client) => {
      // The view routed by is the one of this batch's time: a view change waits for the batch, and a
      // batch after it reads the new view (db/routing-lock.ts).
      await client.query(ROUTING_LOCK_SHARED_SQL);
      const receiver = await routeReceiverOf(client, receiverId);
      if (!receiver) return null;
      const picked = (await client.query<{ id: string }>(statements.pick, [receiverId, size])).rows.map((r) => r.id);
      if (picked.length === 0) return null;
      const { rows } = await client.query<{ enabled: boolean; eventId: string | null; missed: boolean }>(
        statements.batch,
        [receiverId, picked],
      );
      // Gone, or disabled again: nothing was marked; the next enable takes up the rest.
      if (!rows[0]?.enabled) return null;
      const sent = await routeLatestStates(
        client,
        receiver,
        rows.filter((r) => r.missed).map((r) => r.eventId!),
        options.restate ?? false,
      );
      const deliveries = sent.map(({ eventId }) => ({ eventId, receiverId, priority: REPLAY_PRIORITY }));
      await enqueueOrdered((text, values) => client.query(text, values), deliveries);
      const replaced = sent.filter((s) => s.replaced);
      if (statements.sent && replaced.length > 0) {
        await client.query(statements.sent, [
          receiverId,
          replaced.map((s) => s.resourceId),
          replaced.map((s) => s.eventId),
          replaced.map((s) => s.version),
        ]);
      }
      return { records: picked.length, deliveries: deliveries.length };
    });
    if (!batch) return;
    run.records += batch.records;
    run.deliveries += batch.deliveries;
    await options.onProgress?.(run.records);
  }
}

/** The receiver as routing reads it (view-routing.ts); null when it is gone. */
async function routeReceiverOf(client: PoolClient, receiverId: string): Promise<RouteReceiver | null> {
  const row = (await client.query<RouteReceiverRow>(RECEIVER_SQL, [receiverId])).rows[0];
  return row ? routeReceiver(row) : null;
}

/** Waits until none of the transactions open at `snapshot` is still open, for at most `ms`; false when some still are. */
async function waitUntilEnded(pool: Pool, snapshot: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    const { rows } = await pool.query<{ open: number }>(STILL_OPEN_SQL, [snapshot]);
    if (rows[0]!.open === 0) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Per receiver that had a catch-up, its records not delivered yet; bounded by `timeoutMs` (a scrape must not hang). */
export async function readCatchUpPending(
  pool: Pool,
  timeoutMs: number,
): Promise<{ receiverId: string; pending: number }[]> {
  return await boundedQuery<{ receiverId: string; pending: number }>(pool, PENDING_SQL, timeoutMs);
}

/** Has this process's /metrics read the catch-up gauge from `pool` at scrape time. */
export function exportCatchUpGauge(pool: Pool, timeoutMs = 1000): void {
  setCatchUpReader(() => readCatchUpPending(pool, timeoutMs));
}
