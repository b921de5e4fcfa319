// Turns a committed-together change into an event: derives its type, stores it with its exact body
// and hands it to the fan-out, all inside the caller's transaction.
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { sqlOf } from '../db/transaction-sql.ts';
import { deriveEventType, type EventType, type Snapshot } from './derive-event.ts';
import { renderEventBody } from './event-body.ts';

export type Change = { resourceId: string; before: Snapshot; after: Snapshot; at: Date };
/** `version`: the resource's version after this change (resource_version; docs/contract.md, "Event body"). */
export type StoredEvent = {
  id: string;
  type: EventType;
  resourceId: string;
  version: number;
  occurredAt: Date;
  body: string;
};

/** Called with the events stored by a transaction, in order, inside it (e.g. to enqueue deliveries). */
export type EventFanOut = (em: EntityManager, events: readonly StoredEvent[]) => Promise<void>;

/**
 * The hook the catalog calls with the changes of one transaction (one or a batch): stores their
 * events (a change may have none) and fans them out together. Returns the stored events, in order.
 */
export type ChangeRecorder = (em: EntityManager, changes: readonly Change[]) => Promise<StoredEvent[]>;

const INSERT_EVENTS = `insert into event (id, type, resource_id, version, occurred_at, body)
  select id, type, resource_id, version, occurred_at, body
    from unnest($1::uuid[], $2::text[], $3::uuid[], $4::bigint[], $5::timestamptz[], $6::text[]) with ordinality as e(id, type, resource_id, version, occurred_at, body, o) order by o`;

// The resources' next versions, one per id (a batch never repeats an id: catalog-writes.ts refuses
// it). The caller holds each record's advisory lock, so writers of one id bump in turn; the row lock
// of the upsert is a second guard. The counter outlives the record (delete and re-create go on).
/** $1 resource ids (each once): the next version of each, taken (resource_version). */
export const NEXT_VERSIONS_SQL = `insert into resource_version (resource_id, version)
  select id, 1 from unnest($1::uuid[]) as u(id) order by id
  on conflict (resource_id) do update set version = resource_version.version + 1
  returning resource_id::text as id, version::text as version`;

type Pending = { change: Change; type: EventType };

function eventOf({ change, type }: Pending, version: number): StoredEvent {
  const id = randomUUID();
  const doc = type === 'LEARNING_OPPORTUNITY_DELETED' ? null : (change.after?.doc ?? null);
  return {
    id,
    type,
    resourceId: change.resourceId,
    version,
    occurredAt: change.at,
    body: renderEventBody({ id, type, occurredAt: change.at, resourceId: change.resourceId, version, doc }),
  };
}

export function createChangeRecorder(fanOut: EventFanOut | null): ChangeRecorder {
  return async (em, changes) => {
    const pending = changes.flatMap((change): Pending[] => {
      const type = deriveEventType(change.before, change.after);
      return type ? [{ change, type }] : [];
    });
    if (pending.length === 0) return [];
    const run = sqlOf(em);
    const versions = new Map(
      (await run<{ id: string; version: string }>(NEXT_VERSIONS_SQL, [pending.map((p) => p.change.resourceId)])).map(
        (r) => [r.id, Number(r.version)],
      ),
    );
    const events = pending.map((p) => eventOf(p, versions.get(p.change.resourceId)!));
    // One multi-row insert with bound parameters, on the caller's transaction (the bodies hold the
    // records' docs, megabytes per batch).
    await run(INSERT_EVENTS, [
      events.map((e) => e.id),
      events.map((e) => e.type),
      events.map((e) => e.resourceId),
      events.map((e) => e.version),
      events.map((e) => e.occurredAt),
      events.map((e) => e.body),
    ]);
    await fanOut?.(em, events);
    return events;
  };
}
