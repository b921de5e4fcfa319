// Data the console's browser tests (and its screenshots) show that live deliveries would take hours to
// make: attempts spread over the last 24 hours (the receiver page's chart), and an event whose body
// has a line far wider than the page.
import { testDb } from '../hooks.ts';

/** Attempts of one clock hour, `hoursAgo` hours before the current one (0 = the current hour). */
export type HourOfAttempts = { hoursAgo: number; successes: number; failures: number };

/**
 * Writes attempt rows of `receiverId` (for `eventId`, an event that exists) in the given hours, at
 * minute 30 of each (the current hour's in its first minute, never in the future); failures answered
 * 500. Returns each hour's start, as the service writes it (ISO, UTC).
 */
export async function insertAttemptHistory(
  receiverId: string,
  eventId: string,
  hours: HourOfAttempts[],
): Promise<string[]> {
  const starts: string[] = [];
  for (const { hoursAgo, successes, failures } of hours) {
    const { rows } = await testDb().pool.query<{ hour: string }>(
      `with t as (select date_trunc('hour', now(), 'UTC') - $3::int * interval '1 hour' as hour)
       insert into delivery_attempt (event_id, receiver_id, attempt, started_at, duration_ms, status_code, response_excerpt, outcome)
       select $1, $2, 1, t.hour + case when $3::int = 0 then interval '0 s' else interval '30 min' end, 40 + n % 50,
              case when n <= $4 then 200 else 500 end, case when n <= $4 then 'ok' else 'down for maintenance' end,
              case when n <= $4 then 'success' else 'http_error' end
         from t, generate_series(1, $4::int + $5::int) n
       returning (select to_char(hour at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') from t) as hour`,
      [eventId, receiverId, hoursAgo, successes, failures],
    );
    starts.push(rows[0]!.hour);
  }
  return starts;
}

/** An event (LEARNING_OPPORTUNITY_PUBLISHED) whose body holds a 600-character word; its id. */
export async function insertLongBodyEvent(): Promise<string> {
  const body = JSON.stringify({
    type: 'LEARNING_OPPORTUNITY_PUBLISHED',
    data: { title: 'A record with a very long field', description: `https://example.org/${'x'.repeat(600)}` },
  });
  const { rows } = await testDb().pool.query<{ id: string }>(
    `insert into event (id, type, resource_id, occurred_at, body)
     values (gen_random_uuid(), 'LEARNING_OPPORTUNITY_PUBLISHED', gen_random_uuid(), now(), $1) returning id`,
    [body],
  );
  return rows[0]!.id;
}
