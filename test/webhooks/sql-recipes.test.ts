// Every SQL block of docs/webhooks-sql.md runs against the current schema (placeholders filled in),
// the failures recipe leaves throttled answers out, and the replay recipe moves a dead letter back to the delivery queue as attempt 1.
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { BOSS_SCHEMA, DEAD_LETTER_QUEUE, DELIVERY_QUEUE, REPLAY_PRIORITY } from '../../src/webhooks/queue/boss.ts';
import { insertBareEvent, jobs, removeBareEvent, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

const blocks = [
  ...readFileSync(new URL('../../docs/webhooks-sql.md', import.meta.url), 'utf8').matchAll(/```sql\n([\s\S]*?)```/g),
].map((m) => m[1]!);

describe('docs/webhooks-sql.md recipes', () => {
  const stack = useWebhookStack({ worker: false });
  let receiverId: string;
  let eventId: string;
  before(async () => {
    receiverId = (await stack.addReceiver('http://127.0.0.1:9/unused')).id;
    const pool = testDb().pool;
    eventId = await insertBareEvent();
    await pool.query(
      `insert into delivery_attempt (event_id, receiver_id, attempt, started_at, duration_ms, status_code, outcome, dead_lettered) values ($1, $2, 1, now(), 5, 500, 'http_error', true)`,
      [eventId, receiverId],
    );
    // A receiver asking to be left alone (429 with Retry-After) is not failing.
    await pool.query(
      `insert into delivery_attempt (event_id, receiver_id, attempt, started_at, duration_ms, status_code, outcome, dead_lettered) values ($1, $2, 2, now(), 5, 429, 'throttled', false)`,
      [eventId, receiverId],
    );
    await stack.boss.insert(DEAD_LETTER_QUEUE, [{ data: { eventId, receiverId, attempts: 1 } }]);
    // Attempts 9 and 10 pending: the highest is 10, not '9' (text order).
    await stack.boss.insert(
      DELIVERY_QUEUE,
      [9, 10].map((attempt) => ({ data: { eventId, receiverId, attempt }, group: { id: receiverId } })),
    );
  });
  after(async () => {
    await removeBareEvent(eventId);
  });

  it('has the recipes this test knows', () => {
    expect(blocks.length).to.be.at.least(7);
  });

  it('runs every recipe; the pending view ranks attempt 10 above 9; the replay moves the dead letter', async () => {
    const fill = (sql: string) => sql.replaceAll('<event id>', eventId).replaceAll('<receiver id>', receiverId);
    const client = await testDb().pool.connect();
    try {
      for (const sql of blocks) {
        const result = await client.query(fill(sql)).catch((error: Error) => {
          throw new Error(`${error.message} in:\n${sql}`);
        });
        if (sql.includes('count(distinct a.event_id) as events')) {
          const rows = (result as unknown as { rows: { receiver_id: string; outcome: string }[] }).rows;
          expect(rows.filter((r) => r.receiver_id === receiverId).map((r) => r.outcome)).to.deep.equal(['http_error']);
        }
        if (sql.includes('highest_attempt')) {
          const rows = (Array.isArray(result) ? result.at(-1) : result).rows;
          expect(rows.find((r: { receiver_id: string }) => r.receiver_id === receiverId).highest_attempt).to.equal(10);
        }
      }
    } finally {
      client.release();
    }
    expect(await jobs(DEAD_LETTER_QUEUE, { receiverId })).to.deep.equal([]);
    const pending = (await jobs(DELIVERY_QUEUE, { receiverId })).map((j) => j.data.attempt);
    expect(pending.toSorted((a, b) => Number(a) - Number(b))).to.deep.equal([1, 9, 10]);
    const { rows } = await testDb().pool.query(
      `select count(*)::int as n from ${BOSS_SCHEMA}.job where name = $1 and group_id = $2`,
      [DELIVERY_QUEUE, receiverId],
    );
    expect(rows[0].n).to.equal(3);
    // Below live deliveries, as `deliveries replay-dead` puts them (operations.md section 7).
    const replayed = await testDb().pool.query<{ priority: number }>(
      `select priority from ${BOSS_SCHEMA}.job where name = $1 and group_id = $2 and (data->>'attempt')::int = 1`,
      [DELIVERY_QUEUE, receiverId],
    );
    expect(replayed.rows.map((r) => r.priority)).to.deep.equal([REPLAY_PRIORITY]);
  });
});
