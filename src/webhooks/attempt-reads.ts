// Reads for internal readers (GraphQL): stored events and their delivery attempts, in plain SQL.
import type { Pool } from 'pg';

export type StoredEventView = { id: string; type: string; resourceId: string; occurredAt: string; body: string };
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
};

const ATTEMPT_COLUMNS = `id::text as id, event_id as "eventId", receiver_id as "receiverId", attempt, started_at as "startedAt",
  duration_ms as "durationMs", status_code as "statusCode", error, response_excerpt as "responseExcerpt", outcome, dead_lettered as "deadLettered"`;

const present = (row: Omit<AttemptView, 'startedAt'> & { startedAt: Date }): AttemptView => ({ ...row, startedAt: row.startedAt.toISOString() });

export async function getStoredEvent(pool: Pool, id: string): Promise<StoredEventView | null> {
  const { rows } = await pool.query<Omit<StoredEventView, 'occurredAt'> & { occurredAt: Date }>(
    'select id, type, resource_id as "resourceId", occurred_at as "occurredAt", body from event where id = $1',
    [id],
  );
  const row = rows[0];
  return row ? { ...row, occurredAt: row.occurredAt.toISOString() } : null;
}

/** Attempts filtered by event and/or receiver; newest first, or oldest first for one event's history. */
export async function listAttempts(pool: Pool, filter: { eventId?: string; receiverId?: string; limit: number; offset: number; order?: 'newest' | 'oldest' }): Promise<AttemptView[]> {
  const where: string[] = [];
  const values: unknown[] = [];
  if (filter.eventId) where.push(`event_id = $${values.push(filter.eventId)}`);
  if (filter.receiverId) where.push(`receiver_id = $${values.push(filter.receiverId)}`);
  const order = filter.order === 'oldest' ? 'asc' : 'desc';
  const { rows } = await pool.query(
    `select ${ATTEMPT_COLUMNS} from delivery_attempt ${where.length ? `where ${where.join(' and ')}` : ''}
      order by id ${order} limit $${values.push(filter.limit)} offset $${values.push(filter.offset)}`,
    values,
  );
  return rows.map(present);
}
