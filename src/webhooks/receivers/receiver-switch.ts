// Disabling and enabling a receiver (used through receivers.ts by the CLI and GraphQL): a disable
// sets its waiting deliveries aside; an enable ends a pause it asked for and queues its catch-up,
// the latest state of every record it missed (catch-up/catch-up.ts).
import type { Pool } from 'pg';
import { inTransaction } from '../../db/pg-transaction.ts';
import { notFound } from '../../kernel/errors.ts';
import { receiversDisabled } from '../../kernel/metrics.ts';
import { type CatchUpOptions, runCatchUp, startCatchUp } from '../catch-up/catch-up.ts';
import { queueViewChange } from '../catch-up/view-change.ts';
import { endReceiverPause } from '../queue/receiver-pause-sql.ts';
import { setAsideWaitingDeliveries } from '../queue/set-aside.ts';
import { readReceiver, type ReceiverInfo } from './receiver-reads.ts';

/**
 * Stops deliveries to a receiver: its waiting deliveries become dead letters at once (`enable` sends the
 * latest state of the records it missed). Disabling a disabled receiver changes nothing (it keeps its first reason).
 */
export async function disableReceiver(
  deps: { pool: Pool },
  id: string,
): Promise<ReceiverInfo & { setAside: number; inFlight: number; behindInFlight: number }> {
  const { setAside, wasEnabled, inFlight, behindInFlight } = await inTransaction(deps.pool, async (client) => {
    const { rows } = await client.query<{ was_enabled: boolean }>(
      `update receiver r set enabled = false, disabled_reason = coalesce(r.disabled_reason, 'manual'), disabled_at = coalesce(r.disabled_at, now())
         from (select id, enabled as was_enabled from receiver where id = $1 for no key update) old
        where r.id = old.id returning old.was_enabled`,
      [id],
    );
    if (!rows[0]) throw notFound(`Receiver ${id}`);
    const setAside = await setAsideWaitingDeliveries(client, [id]);
    // Deliveries in flight finish; those waiting behind them (their records' next versions) become
    // dead letters as each finishes (queue/lanes.ts), not here.
    const lanes = await client.query<{ in_flight: number; behind: number }>(
      `select count(*)::int as in_flight, coalesce(sum(cardinality(waiting)), 0)::int as behind
         from delivery_lane where receiver_id = $1 and head_job is not null`,
      [id],
    );
    return {
      wasEnabled: rows[0].was_enabled,
      setAside,
      inFlight: lanes.rows[0]!.in_flight,
      behindInFlight: lanes.rows[0]!.behind,
    };
  });
  if (wasEnabled) receiversDisabled.inc({ reason: 'manual' });
  return { ...(await readReceiver(deps.pool, id)), setAside, inFlight, behindInFlight };
}

/**
 * Resumes deliveries and restarts the failure clock (one failure after `enable` does not disable it again). A disabled
 * receiver gets its catch-up (catch-up/catch-up.ts) queued before this returns; `enable` again finishes one cut short.
 * The operator's word ends a pause the receiver asked for (a 429/503's Retry-After): its deferred
 * deliveries and its catch-up start now; one still not ready pauses it again with its next answer.
 * `queuedNow`: the catch-up's records this call queued (those of one cut short included); `pauseEnded`:
 * it was paused, and `resumedNow` of its deferred deliveries start now.
 */
export async function enableReceiver(
  deps: { pool: Pool },
  id: string,
  options: CatchUpOptions = {},
): Promise<ReceiverInfo & { wasEnabled: boolean; queuedNow: number; pauseEnded: boolean; resumedNow: number }> {
  const { wasEnabled, pause } = await inTransaction(deps.pool, async (client) => {
    const { rows } = await client.query<{ was_enabled: boolean }>(
      `update receiver r set enabled = true, disabled_reason = null, disabled_at = null, failing_since = null from
         (select id, enabled as was_enabled from receiver where id = $1 for no key update) old where r.id = old.id returning old.was_enabled`,
      [id],
    );
    if (!rows[0]) throw notFound(`Receiver ${id}`);
    const pause = await endReceiverPause(client, id);
    if (!rows[0].was_enabled) await startCatchUp(client, id);
    return { wasEnabled: rows[0].was_enabled, pause };
  });
  const run = await runCatchUp(deps.pool, id, options);
  // A view changed while it was disabled (or a resync cut short by the disable): its records now.
  await queueViewChange(deps.pool, id);
  return {
    ...(await readReceiver(deps.pool, id)),
    wasEnabled,
    queuedNow: run.records,
    pauseEnded: pause.ended,
    resumedNow: pause.moved,
  };
}
