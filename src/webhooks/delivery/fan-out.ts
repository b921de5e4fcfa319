// The EventFanOut of the catalog writes: for the stored events of a transaction, one delivery per
// event and enabled receiver subscribed to its type, enqueued through its lane (queue/lanes.ts: a job
// at once, or waiting behind the record's open delivery to that receiver) in the mutation's own
// transaction (fromKysely over the EntityManager's transaction), so the changes, the events and their
// deliveries commit or roll back together. The writer holds each record's advisory lock, so the
// deliveries of one record enter their lanes in version order. A bulk write of 500 records is one
// receiver query and one enqueueing statement.
import type { EntityManager } from '@mikro-orm/postgresql';
import { fromKysely, type PgBoss } from 'pg-boss';
import type { Orm } from '../../db/orm.ts';
import type { EventFanOut } from '../../events/record-change.ts';
import { eventsEmitted } from '../../kernel/metrics.ts';
import { enqueueOrdered } from '../queue/lanes.ts';

/** Enabled receivers subscribed to each of the event types $1 (an empty subscription means every type), oldest receiver first. */
export const SUBSCRIBED_RECEIVERS_SQL = `select t.type, r.id from unnest($1::text[]) as t(type)
  join receiver r on r.enabled and (cardinality(r.event_types) = 0 or t.type = any(r.event_types)) order by r.created_at, r.id`;

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
    const types = [...new Set(events.map((e) => e.type))];
    const subscribed = new Map<string, string[]>(types.map((t) => [t, []]));
    for (const r of (await db.executeSql(SUBSCRIBED_RECEIVERS_SQL, [types])).rows as { type: string; id: string }[])
      subscribed.get(r.type)!.push(r.id);
    await enqueueOrdered(
      (text, values) => db.executeSql(text, values),
      events.flatMap((event) => subscribed.get(event.type)!.map((receiverId) => ({ eventId: event.id, receiverId }))),
    );
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
