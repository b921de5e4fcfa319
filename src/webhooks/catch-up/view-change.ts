// A receiver's view changed (`receivers update --view` / `--no-view`, GraphQL updateWebhookReceiver,
// receivers/receivers.ts updateReceiver): it is sent what makes its copy equal to the new view.
// - which: the published records in one of the two views and not the other (no view: every
//   published record), read off the list's own rows (list_entry: the record's current state, as the
//   list with that filter would return it), in the updating transaction;
// - what and how: the resync's path (resync-sql.ts, catch-up.ts queueLatestStates), its rows in
//   receiver_resync: each record's latest event, routed by the new view (delivery/view-routing.ts
//   routeLatestState): a record that came in gets its latest state (one made of its current state
//   when its events were pruned), one that went out a LEFT_VIEW event, each under a fresh event id
//   and a new version of its record (restated: the receiver may have taken that very event, or its
//   LEFT_VIEW, in an earlier view; one that de-duplicates on ids would drop it, and one that compares
//   versions would find it not newer); in batches under the records'
//   locks, through their lanes at the replays' priority, so per-record order holds with live changes.
//   From the update's commit on, the fan-out routes every new change by the new view.
// The change shows as a resync in `receivers list` (its progress). A disabled receiver's rows wait
// for its enable, which queues them after its catch-up (receivers.ts enableReceiver), restated like
// these (so does the rest of a resync that a disable cut short).
import type { Pool, PoolClient } from 'pg';
import type { View } from '../../views/view.ts';
import { lockRouting } from '../../db/routing-lock.ts';
import { listEntryFacetsSql, viewSql } from '../../views/view-sql.ts';
import { viewOfText } from '../delivery/view-routing.ts';
import { queueLatestStates } from './catch-up.ts';
import {
  RESYNC_FORGET_QUEUED_SQL,
  RESYNC_PICK_SQL,
  RESYNC_RESTATED_BATCH_SQL,
  RESYNC_SENT_SQL,
  RESYNC_START_SQL,
} from './resync-sql.ts';

// $1 receiver id, $2 the new view's text or null: sets it; a row (with the view before) only when it changed.
const SET_VIEW_SQL = `
  with old as (select view from receiver where id = $1 for no key update)
  update receiver r set view = $2 from old where r.id = $1 and old.view is distinct from $2::text
  returning old.view as before`;

const FACETS = listEntryFacetsSql('le');

/** In a view (null: every published record), over list_entry `le`, values bound through `param`. */
const inSql = (view: View | null, param: (v: readonly string[]) => string) =>
  view === null ? `(le.status = 'PUBLISHED')` : viewSql(view, FACETS, param);

/**
 * In the updating transaction: sets receiver `receiverId`'s view to `view` (canonical text, null:
 * none) and, when that changes it, adds the records whose membership differs to its resync. Returns
 * whether the view changed.
 */
export async function startViewChange(client: PoolClient, receiverId: string, view: string | null): Promise<boolean> {
  const changed = (await client.query<{ before: string | null }>(SET_VIEW_SQL, [receiverId, view])).rows[0];
  if (!changed) return false;
  // The catalog writes under way finish first, and later ones route by the new view (routing-lock.ts);
  // at once when the caller took the lock first, as updateReceiver does.
  await lockRouting(client);
  const values: unknown[] = [receiverId];
  const param = (v: readonly string[]) => `$${values.push(v)}`;
  const before = inSql(viewOfText(changed.before), param);
  const after = inSql(viewOfText(view), param);
  await client.query(RESYNC_FORGET_QUEUED_SQL, [receiverId]);
  await client.query(
    `insert into receiver_resync (receiver_id, resource_id)
     select $1, le.id from list_entry le
      where le.status = 'PUBLISHED' and ${before} is distinct from ${after}
      order by le.id
     on conflict (receiver_id, resource_id) do nothing`,
    values,
  );
  await client.query(RESYNC_START_SQL, [receiverId, null]);
  return true;
}

/** After the updating (or enabling) transaction committed: queues the receiver's resync rows not queued yet, restated (the resync's batches). */
export async function queueViewChange(pool: Pool, receiverId: string): Promise<void> {
  await queueLatestStates(
    pool,
    receiverId,
    { pick: RESYNC_PICK_SQL, batch: RESYNC_RESTATED_BATCH_SQL, sent: RESYNC_SENT_SQL },
    { restate: true },
    { records: 0, deliveries: 0 },
  );
}
