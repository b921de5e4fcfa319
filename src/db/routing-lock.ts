// Writers and changes of a receiver's view, serialised: a catalog write routes its events to receivers
// by their views as it reads them (webhooks/delivery/fan-out.ts), and a view change finds the records
// whose membership differs from the catalog as it reads it (webhooks/catch-up/view-change.ts). A
// write that routed by the view before and committed after the change looked would be sent as the
// old view has it and never corrected (a record it moved out of the new view stayed at the receiver).
// So every catalog write holds this advisory lock shared, from its records' locks to its commit, and
// so does each batch of a catch-up or resync (it reads the view it routes by); a view change takes it
// exclusive: it waits for the writes under way, and the writes after it wait for its commit and read
// the new view. So do a new receiver and new event types (a receiver added while a write was under
// way missed that write's change, though it committed after the receiver existed). Writers never
// wait for each other on it. The two-key form: a key space of its own, apart from the records'
// one-key locks.
import type { PoolClient } from 'pg';

export const ROUTING_LOCK_KEY = `hashtext('receiver_views'), 0`;

/** Taken by each batch of a catch-up or resync, before it reads the receiver's view. */
export const ROUTING_LOCK_SHARED_SQL = `select pg_advisory_xact_lock_shared(${ROUTING_LOCK_KEY})`;

/** How long a view change tries for the lock before it queues for it. */
const TRY_MS = 1000;

/**
 * Takes the lock exclusive in `client`'s transaction (at once when it holds it already). It tries
 * for up to a second without queueing: a waiting exclusive request holds up every new write behind
 * the writes under way (a bulk write takes seconds). Then it queues.
 */
export async function lockRouting(client: PoolClient): Promise<void> {
  const until = Date.now() + TRY_MS;
  do {
    const { rows } = await client.query<{ ok: boolean }>(`select pg_try_advisory_xact_lock(${ROUTING_LOCK_KEY}) as ok`);
    if (rows[0]!.ok) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  } while (Date.now() < until);
  await client.query(`select pg_advisory_xact_lock(${ROUTING_LOCK_KEY})`);
}
