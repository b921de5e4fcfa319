// The EventFanOut of the catalog writes: for a stored event, one delivery job per enabled receiver
// subscribed to its type, inserted through the mutation's own transaction (fromKysely over the
// EntityManager's transaction), so the change, the event and its jobs commit or roll back together.
import type { EntityManager } from '@mikro-orm/postgresql';
import { fromKysely, type PgBoss } from 'pg-boss';
import type { Orm } from '../db/orm.ts';
import type { EventFanOut } from '../events/record-change.ts';
import { eventsEmitted } from '../metrics.ts';
import { enqueueDeliveries } from './queue.ts';

/** Enabled receivers subscribed to an event type (an empty subscription means every type). */
export const SUBSCRIBED_RECEIVERS_SQL = `select id from receiver where enabled and (cardinality(event_types) = 0 or $1 = any(event_types)) order by created_at, id`;

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
  return async (em: EntityManager, event) => {
    const db = fromKysely(em.getKysely());
    const { rows } = await db.executeSql(SUBSCRIBED_RECEIVERS_SQL, [event.type]);
    await enqueueDeliveries(
      deps.boss,
      db,
      rows.map((r: { id: string }) => ({ eventId: event.id, receiverId: r.id, attempt: 1 })),
    );
    const transaction = em.getTransactionContext();
    if (transaction) uncommitted.set(transaction, [...(uncommitted.get(transaction) ?? []), event.type]);
    else eventsEmitted.inc({ type: event.type });
  };
}
