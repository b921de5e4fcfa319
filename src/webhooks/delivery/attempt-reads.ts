// Reads for internal readers (GraphQL): stored events and their delivery attempts, in plain SQL.
import type { Pool } from 'pg';
import { isoSql } from '../../db/iso-sql.ts';

/**
 * A stored event. `inFeed`: false for one stored for receivers only, outside the change feed (a test
 * event, a LEFT_VIEW, a view change's restatement, one made for a resync of a record whose events
 * retention pruned).
 */
export type StoredEventView = {
  id: string;
  type: string;
  resourceId: string;
  occurredAt: string;
  inFeed: boolean;
  body: string;
};
export type AttemptView = {
  id: string;
  eventId: string;
  receiverId: string;
  attempt: number;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  outcome: string;
  deadLettered: boolean;
  /** The event's type (a primary-key look-up per row), so that a list of attempts shows what was sent. */
  eventType: string | null;
};

const ATTEMPT_COLUMNS = `id::text as id, event_id as "eventId", receiver_id as "receiverId", attempt, ${isoSql('started_at')} as "startedAt",
  duration_ms as "durationMs", status_code as "statusCode", error, response_excerpt as "responseExcerpt", outcome, dead_lettered as "deadLettered",
  (select e.type from event e where e.id = event_id) as "eventType"`;

export async function getStoredEvent(pool: Pool, id: string): Promise<StoredEventView | null> {
  const { rows } = await pool.query<StoredEventView>(
    `select id, type, resource_id as "resourceId", ${isoSql('occurred_at')} as "occurredAt", xid is not null as "inFeed", body
       from event where id = $1`,
    [id],
  );
  return rows[0] ?? null;
}

export type EventSummary = Omit<StoredEventView, 'body'>;

/** Stored events, newest first, optionally of one type and/or one resource (without their bodies); test events (WEBHOOK_TEST) only when asked for by type. */
export async function listStoredEvents(
  pool: Pool,
  filter: { type?: string; resourceId?: string; limit: number },
): Promise<EventSummary[]> {
  const { rows } = await pool.query<EventSummary>(
    `select id, type, resource_id as "resourceId", ${isoSql('occurred_at')} as "occurredAt", xid is not null as "inFeed" from event
      where ($1::text is null or type = $1) and ($2::uuid is null or resource_id = $2) and ($1::text is not null or type <> 'WEBHOOK_TEST')
      order by occurred_at desc, id desc limit $3`,
    [filter.type ?? null, filter.resourceId ?? null, filter.limit],
  );
  return rows;
}

/** Attempts filtered by event, receiver and/or outcome (lower case, as stored), newest first. */
export async function listAttempts(
  pool: Pool,
  filter: { eventId?: string; receiverId?: string; outcome?: string; limit: number; offset: number },
): Promise<AttemptView[]> {
  const where: string[] = [];
  const values: unknown[] = [];
  if (filter.eventId) where.push(`event_id = $${values.push(filter.eventId)}`);
  if (filter.receiverId) where.push(`receiver_id = $${values.push(filter.receiverId)}`);
  if (filter.outcome) where.push(`outcome = $${values.push(filter.outcome)}`);
  const { rows } = await pool.query<AttemptView>(
    `select ${ATTEMPT_COLUMNS} from delivery_attempt ${where.length ? `where ${where.join(' and ')}` : ''}
      order by delivery_attempt.id desc limit $${values.push(filter.limit)} offset $${values.push(filter.offset)}`,
    values,
  );
  return rows;
}

/** One page of each event's attempts: the same limit, offset and receiver filter for every event. */
export type EventAttemptsPage = { receiverId?: string; limit: number; offset: number };

/**
 * The attempts of many events in one statement: for each event its own attempts, oldest first,
 * filtered and paged on their own (offset and limit count that event's rows only); [] for an event without any.
 */
export async function listAttemptsOfEvents(
  pool: Pool,
  eventIds: readonly string[],
  page: EventAttemptsPage,
): Promise<Map<string, AttemptView[]>> {
  // Ordered by ranked.id, not `id`: a bare `id` in ORDER BY would be the text output column.
  const { rows } = await pool.query<AttemptView>(
    `select ${ATTEMPT_COLUMNS} from (
       select delivery_attempt.*, row_number() over (partition by event_id order by delivery_attempt.id) as position from delivery_attempt
        where event_id = any($1::uuid[]) and ($2::uuid is null or receiver_id = $2)
     ) ranked
     where position > $4::bigint and position <= $4::bigint + $3::bigint
     order by ranked.event_id, ranked.id`,
    [eventIds, page.receiverId ?? null, page.limit, page.offset],
  );
  const byEvent = new Map<string, AttemptView[]>(eventIds.map((id) => [id, []]));
  for (const attempt of rows) byEvent.get(attempt.eventId)!.push(attempt);
  return byEvent;
}
