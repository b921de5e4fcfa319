// What a catch-up, a resync or a view change sends for each record's latest state (catch-up.ts
// queueLatestStates): the record's newest event, or what routing makes of it for the receiver (a
// LEFT_VIEW, a restatement under a fresh id), stored here before its delivery is enqueued.
import type { PoolClient } from 'pg';
import { NEXT_VERSIONS_SQL } from '../../events/record-change.ts';
import {
  restated,
  ROUTE_EVENT_COLUMNS,
  type RouteEventRow,
  type RouteReceiver,
  routeLatestState,
  type StoredAside,
  storeAsides,
} from '../delivery/view-routing.ts';

/** An event sent for a record's latest state; `replaced`: another than the record's newest (a LEFT_VIEW, a restatement). */
export type SentState = { eventId: string; resourceId?: string; version?: number; replaced: boolean };

/**
 * The events to send for records' newest events `eventIds`: as they are to a receiver without a
 * view; to one with a view, what routeLatestState makes of each; with `restate`, under fresh ids
 * and new versions of their records (restated). The events this needs (LEFT_VIEW, restatements) are stored here, in the batch's transaction.
 */
export async function routeLatestStates(
  client: PoolClient,
  receiver: RouteReceiver,
  eventIds: string[],
  restate: boolean,
): Promise<SentState[]> {
  if ((receiver.view === null && !restate) || eventIds.length === 0)
    return eventIds.map((eventId) => ({ eventId, replaced: false }));
  const { rows } = await client.query<RouteEventRow & { body: string }>(
    `select ${ROUTE_EVENT_COLUMNS}, e.body from event e where e.id = any($1::uuid[])`,
    [eventIds],
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  const routes = eventIds.flatMap((id) => {
    const event = byId.get(id);
    const route = event ? routeLatestState(receiver, event) : null;
    return route ? [{ route, event: event! }] : [];
  });
  // A restatement takes a new version of its record (the records' locks are held: no writer takes one meanwhile).
  const versions = restate
    ? new Map(
        (
          await client.query<{ id: string; version: string }>(NEXT_VERSIONS_SQL, [
            routes.map((r) => r.event.resourceId),
          ])
        ).rows.map((r) => [r.id, Number(r.version)]),
      )
    : null;
  const asides: StoredAside[] = [];
  const sent = routes.map(({ route: routed, event }): SentState => {
    const route = versions ? restated(routed, event, versions.get(event.resourceId)!) : routed;
    if (route.aside) asides.push(route.aside);
    const { aside } = route;
    return aside
      ? { eventId: route.eventId, resourceId: aside.resourceId, version: aside.version, replaced: true }
      : { eventId: route.eventId, replaced: false };
  });
  await storeAsides((text, values) => client.query(text, values), asides);
  return sent;
}
