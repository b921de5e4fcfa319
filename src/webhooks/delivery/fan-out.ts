// The EventFanOut of the catalog writes: for the stored events of a transaction, one delivery per
// event and enabled receiver that gets it (by its types and view: view-routing.ts), enqueued through
// its lane (queue/lanes.ts: a job at once, or waiting behind the record's open delivery to that
// receiver) in the mutation's own transaction (fromKysely over the EntityManager's transaction), so
// the changes, the events and their deliveries commit or roll back together. The writer holds each
// record's advisory lock, so the deliveries of one record enter their lanes in version order. A bulk
// write of 500 records is one receiver query and one enqueueing statement (with receivers that have
// a view: one read of the events' stored view facets, and one insert of LEFT_VIEW events when a view
// was left).
import type { EntityManager } from '@mikro-orm/postgresql';
import { fromKysely, type PgBoss } from 'pg-boss';
import type { Orm } from '../../db/orm.ts';
import type { EventFanOut } from '../../events/record-change.ts';
import { eventsEmitted } from '../../kernel/metrics.ts';
import { enqueueOrdered } from '../queue/lanes.ts';
import type { ViewFacets } from '../../views/view.ts';
import {
  ENABLED_RECEIVERS_SQL,
  type RouteReceiverRow,
  routeChanges,
  routeReceiver,
  storeAsides,
} from './view-routing.ts';

/** $1 event ids: the view facets stored with them (migration view_states). */
const EVENT_FACETS_SQL = `select id::text as id, view_before as "viewBefore", view_after as "viewAfter" from event where id = any($1::uuid[])`;
type FacetsRow = { id: string; viewBefore: ViewFacets | null; viewAfter: ViewFacets | null };

// eventsEmitted counts committed events only: types wait here, keyed by the transaction, until
// MikroORM reports its commit (a rolled-back mutation counts nothing).
const uncommitted = new WeakMap<object, string[]>();
const watched = new WeakSet<object>();

function countOnCommit(orm: Orm): void {
  const events = orm.em.getEventManager();
  if (watched.has(events)) return;
  watched.add(events);
  events.registerSubscriber({
    afterTransactionCommit: ({ transaction }) => {
      const types = transaction ? uncommitted.get(transaction) : undefined;
      if (!types) return;
      uncommitted.delete(transaction!);
      for (const type of types) eventsEmitted.inc({ type });
    },
  });
}

export function createFanOut(deps: { boss: PgBoss; orm: Orm }): EventFanOut {
  countOnCommit(deps.orm);
  return async (em: EntityManager, events) => {
    const db = fromKysely(em.getKysely());
    const run = (text: string, values: unknown[]) => db.executeSql(text, values);
    const receivers = ((await run(ENABLED_RECEIVERS_SQL, [])).rows as RouteReceiverRow[]).map(routeReceiver);
    // The view facets the event trigger stored with each event, read only when some receiver has a view.
    const facets = receivers.some((r) => r.view !== null)
      ? new Map(((await run(EVENT_FACETS_SQL, [events.map((e) => e.id)])).rows as FacetsRow[]).map((r) => [r.id, r]))
      : null;
    const routed = events.map((e) => {
      const state = facets?.get(e.id);
      return { ...e, viewBefore: state?.viewBefore ?? null, viewAfter: state?.viewAfter ?? null };
    });
    const { deliveries, asides } = routeChanges(receivers, routed);
    await storeAsides(run, asides);
    await enqueueOrdered(run, deliveries);
    const transaction = em.getTransactionContext();
    if (!transaction) {
      for (const event of events) eventsEmitted.inc({ type: event.type });
      return;
    }
    const pending = uncommitted.get(transaction) ?? [];
    for (const event of events) pending.push(event.type);
    uncommitted.set(transaction, pending);
  };
}
