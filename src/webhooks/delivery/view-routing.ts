// What a receiver gets of an event (the fan-out, fan-out.ts) or of a record's latest state (catch-up,
// resync and a view change: catch-up/catch-up.ts queueLatestStates), by its subscribed types and its
// view (receiver.view, migration receiver_views). One evaluation in this process per receiver and
// event, over the view facets stored with the event (event.view_before, view_after: migration
// view_states), by the one membership rule of views/view.ts: no statement per receiver.
// - a receiver without a view gets the event as it is;
// - one with a view gets what the view's feed holds for it (viewEventKind): the event as it is when
//   the record is in the view after it, or was in before and the event is ARCHIVED or DELETED; a
//   LEFT_VIEW event when it was in before and an update took it out; nothing when out before and after;
// - then its types decide: an empty subscription takes every type, else the type delivered
//   (LEARNING_OPPORTUNITY_LEFT_VIEW is a type of its own) must be among them.
// A LEFT_VIEW delivery is of an event stored outside the change feed (xid null, like a resync's made
// event) under the id the view's feed gives the same leave (views/left-view.ts): receivers of one
// view share the row, and the lanes order it with the record's other deliveries by its version.
import { randomUUID } from 'node:crypto';
import type { QueryResultRow } from 'pg';
import type { EventType } from '../../events/derive-event.ts';
import { restatedBody } from '../../events/event-body.ts';
import { isoSql } from '../../db/iso-sql.ts';
import { LEFT_VIEW_EVENT_TYPE, leftViewEventId, renderLeftViewEvent } from '../../views/left-view.ts';
import { beforeInView, facetsInView, parseView, type View, type ViewFacets, viewEventKind } from '../../views/view.ts';

/** A receiver as routing reads it: its subscribed types (empty: every type) and its view, parsed (null: every record). */
export type RouteReceiver = { id: string; eventTypes: readonly string[]; view: View | null };

/** An event as routing reads it: the record's stored view facets around it (after: null for DELETED). */
export type RouteEvent = {
  id: string;
  type: string;
  resourceId: string;
  version: number;
  /** A Date, or its ISO 8601 text as ROUTE_EVENT_COLUMNS reads it. */
  occurredAt: Date | string;
  viewBefore: ViewFacets | null;
  viewAfter: ViewFacets | null;
};

/** An event to store outside the feed (storeAsides) before its delivery is enqueued: a LEFT_VIEW one, or a restatement. */
export type StoredAside = {
  id: string;
  type: string;
  resourceId: string;
  version: number;
  occurredAt: Date;
  body: string;
  /** The facets of the event it stands for, stored with it: a later latest-state send routes it alike. */
  viewBefore: ViewFacets | null;
  viewAfter: ViewFacets | null;
};

/** What one receiver gets: the id of the event to deliver, and the event to store aside first when it is a LEFT_VIEW or a restatement. */
export type Route = { eventId: string; aside: StoredAside | null };

const views = new Map<string, View>();
/** A receiver's stored view text, parsed (cached: the fan-out reads every receiver's on every write). */
export function viewOfText(text: string | null): View | null {
  if (text === null) return null;
  let view = views.get(text);
  if (!view) {
    if (views.size >= 10_000) views.clear();
    view = parseView(text);
    views.set(text, view);
  }
  return view;
}

const subscribed = (receiver: RouteReceiver, type: string) =>
  receiver.eventTypes.length === 0 || receiver.eventTypes.includes(type);

function leftViewOf(route: RouteEvent, view: View): StoredAside {
  const event = { ...route, occurredAt: new Date(route.occurredAt) };
  return {
    id: leftViewEventId(event.id, view),
    type: LEFT_VIEW_EVENT_TYPE,
    resourceId: event.resourceId,
    version: event.version,
    occurredAt: event.occurredAt,
    body: renderLeftViewEvent(event, view),
    viewBefore: event.viewBefore,
    viewAfter: event.viewAfter,
  };
}

function routeKind(receiver: RouteReceiver, event: RouteEvent, kind: 'as-is' | 'left' | null): Route | null {
  if (kind === null) return null;
  if (kind === 'as-is') return subscribed(receiver, event.type) ? { eventId: event.id, aside: null } : null;
  if (!subscribed(receiver, LEFT_VIEW_EVENT_TYPE)) return null;
  const left = leftViewOf(event, receiver.view!);
  return { eventId: left.id, aside: left };
}

/** What `receiver` gets of a change's event (the fan-out); null: nothing. */
export function routeChange(receiver: RouteReceiver, event: RouteEvent): Route | null {
  if (receiver.view === null) return routeKind(receiver, event, 'as-is');
  return routeKind(receiver, event, viewEventKind(receiver.view, event.type, event.viewBefore, event.viewAfter));
}

/**
 * What `receiver` gets as a record's latest state, `event` being the record's newest event (a
 * catch-up, a resync, a view change), whatever state the receiver's copy holds: the event when the
 * record is in the view after it, or it is DELETED, or ARCHIVED from a state in the view; otherwise
 * the record is out of the view and the receiver is told it left (a copy without it ignores that):
 * never a snapshot of a record outside the view.
 */
export function routeLatestState(receiver: RouteReceiver, event: RouteEvent): Route | null {
  const view = receiver.view;
  if (view === null) return routeKind(receiver, event, 'as-is');
  const asIs =
    facetsInView(view, event.viewAfter) ||
    event.type === 'LEARNING_OPPORTUNITY_DELETED' ||
    (event.type === 'LEARNING_OPPORTUNITY_ARCHIVED' && beforeInView(view, event.viewBefore));
  return routeKind(receiver, event, asIs ? 'as-is' : 'left');
}

/**
 * A route restated under a fresh id and `version`, a new version of its record (a view change:
 * catch-up/view-change.ts). The receiver may have taken the original earlier (the record's latest
 * event while it was in an earlier view, or the LEFT_VIEW of it): a receiver that de-duplicates on
 * event ids would drop it as a repeat, and one that compares versions as not newer. The copy is the
 * same change (type, resource, data), stored outside the feed.
 */
export function restated(route: Route, original: RouteEvent & { body: string }, version: number): Route {
  const id = randomUUID();
  const stated = route.aside ?? {
    id: original.id,
    type: original.type,
    resourceId: original.resourceId,
    version: original.version,
    occurredAt: new Date(original.occurredAt),
    body: original.body,
    viewBefore: original.viewBefore,
    viewAfter: original.viewAfter,
  };
  const body = restatedBody({ ...stated, type: stated.type as EventType }, { id, version });
  return { eventId: id, aside: { ...stated, id, version, body } };
}

/**
 * $1..$8: ids, types, resource ids, versions, occurred_at, bodies, view facets before and after (JSON
 * text). Outside the change feed; a row already stored (another receiver of the view) stays.
 */
const INSERT_ASIDE_SQL = `
  insert into event (id, type, resource_id, version, occurred_at, body, xid, position, view_before, view_after)
  select u.id, u.type, u.resource_id, u.version, u.occurred_at, u.body, null, null, u.view_before, u.view_after
    from unnest($1::uuid[], $2::text[], $3::uuid[], $4::bigint[], $5::timestamptz[], $6::text[], $7::jsonb[], $8::jsonb[])
      as u (id, type, resource_id, version, occurred_at, body, view_before, view_after)
  on conflict (id) do nothing`;

const jsonOrNull = (facets: ViewFacets | null) => (facets === null ? null : JSON.stringify(facets));

const asideValues = (events: readonly StoredAside[]): unknown[] => [
  events.map((e) => e.id),
  events.map((e) => e.type),
  events.map((e) => e.resourceId),
  events.map((e) => e.version),
  events.map((e) => e.occurredAt),
  events.map((e) => e.body),
  events.map((e) => jsonOrNull(e.viewBefore)),
  events.map((e) => jsonOrNull(e.viewAfter)),
];

/** A statement runner (a pool, a client, or pg-boss's over the writer's transaction). */
type Run = (text: string, values: unknown[]) => Promise<unknown>;

/** Stores `asides` (none: no statement) before their deliveries are enqueued. */
export async function storeAsides(run: Run, asides: Iterable<StoredAside>): Promise<void> {
  const list = [...asides];
  if (list.length) await run(INSERT_ASIDE_SQL, asideValues(list));
}

/** A receiver row as the routing statements read it. */
export type RouteReceiverRow = { id: string; eventTypes: string[]; view: string | null };

/** Enabled receivers, oldest first: their subscribed types (empty: every type) and view (null: every record). */
export const ENABLED_RECEIVERS_SQL = `select id::text as id, event_types as "eventTypes", view from receiver where enabled order by created_at, id`;

/** $1 a receiver id: the receiver as routing reads it, enabled or not. */
export const RECEIVER_SQL = `select id::text as id, event_types as "eventTypes", view from receiver where id = $1`;

export const routeReceiver = (row: RouteReceiverRow): RouteReceiver => ({
  id: row.id,
  eventTypes: row.eventTypes,
  view: viewOfText(row.view),
});

/**
 * Every receiver's route for every event, in one pass (the fan-out, a redelivery to all): the
 * deliveries in event order, then receiver order, and the events to store aside first (one each).
 */
export function routeChanges(
  receivers: readonly RouteReceiver[],
  events: readonly RouteEvent[],
): { deliveries: { eventId: string; receiverId: string }[]; asides: StoredAside[] } {
  const deliveries: { eventId: string; receiverId: string }[] = [];
  const asides = new Map<string, StoredAside>();
  for (const event of events)
    for (const receiver of receivers) {
      const route = routeChange(receiver, event);
      if (!route) continue;
      if (route.aside) asides.set(route.aside.id, route.aside);
      deliveries.push({ eventId: route.eventId, receiverId: receiver.id });
    }
  return { deliveries, asides: [...asides.values()] };
}

/** The columns of an event row that routing reads, aliased for RouteEvent (from `event e`). */
export const ROUTE_EVENT_COLUMNS = `e.id::text as id, e.type, e.resource_id::text as "resourceId", e.version::int as version,
  ${isoSql('e.occurred_at')} as "occurredAt", e.view_before as "viewBefore", e.view_after as "viewAfter"`;
export type RouteEventRow = RouteEvent & QueryResultRow;
