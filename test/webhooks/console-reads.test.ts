// The GraphQL reads and actions behind the console (schema/console.graphql): every receiver's hourly
// delivery history in one statement, attempts filtered by outcome with their event type, dead letters
// and their replay (one, or all of a receiver), stored events by type and resource, and the caller's
// scopes; each with its scope.
import { expect } from 'chai';
import type { Pool } from 'pg';
import { readDeliveryHistory } from '../../src/webhooks/receivers/delivery-history.ts';
import { DEAD_LETTER_QUEUE, DELIVERY_QUEUE } from '../../src/webhooks/queue/boss.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, graphql } from '../support/api.ts';
import { insertBareEvent, insertDeadLetter, jobs, useWebhookStack } from '../support/webhooks.ts';

type Hour = { hour: string; attempts: number; successes: number };
const HISTORY = `query($hours: Int) { webhookDeliveryHistory(hours: $hours) { receiverId hours { hour attempts successes } } }`;
const DEAD = `query($id: ID) { webhookDeadLetters(receiverId: $id) { eventId eventType receiverId attempts lastStatusCode lastError } }`;
const REPLAY = `mutation($id: ID!, $eventId: ID) { replayWebhookDeadLetters(receiverId: $id, eventId: $eventId) { replayed remaining } }`;
const REPLAY_ALL = `mutation($id: ID!, $include: Boolean) { replayWebhookDeadLetters(receiverId: $id, includeSuperseded: $include) { replayed superseded remaining } }`;

async function insertAttempt(
  eventId: string,
  receiverId: string,
  outcome: string,
  hoursAgo: number,
  statusCode: number | null = outcome === 'success' ? 200 : 500,
): Promise<void> {
  await testDb().pool.query(
    `insert into delivery_attempt (event_id, receiver_id, attempt, started_at, duration_ms, status_code, error, response_excerpt, outcome, dead_lettered)
     values ($1, $2, 1, date_trunc('hour', now(), 'UTC') - $3 * interval '1 hour' + interval '1 minute', 5, $4, null, null, $5, false)`,
    [eventId, receiverId, hoursAgo, statusCode, outcome],
  );
}

describe('GraphQL: console reads and actions', function () {
  this.timeout(20_000);
  const stack = useWebhookStack({ worker: false });
  let manager: string;
  let reader: string;
  const call = async <T>(query: string, variables: Record<string, unknown> = {}, key = manager) => {
    const res = await graphql<Record<string, T>>(stack.api, key, query, variables);
    return {
      data: res.body.data ? Object.values(res.body.data)[0]! : null,
      codes: (res.body.errors ?? []).map((e) => e.extensions?.code),
      errors: res.body.errors ?? [],
    };
  };

  before(async () => {
    manager = await createTestKey(['receivers:manage']);
    reader = await createTestKey(['graphql:read']);
  });

  it('gives every receiver its attempts and successes per hour, oldest first, in one statement', async () => {
    const [a, b, idle] = [
      await stack.addReceiver('http://127.0.0.1:9/a'),
      await stack.addReceiver('http://127.0.0.1:9/b'),
      await stack.addReceiver('http://127.0.0.1:9/idle'),
    ];
    const event = await insertBareEvent();
    // In the order the worker records them: by time.
    await insertAttempt(event, a.id, 'success', 5); // long before a 3-hour window
    await insertAttempt(event, a.id, 'success', 3); // just before it
    await insertAttempt(event, a.id, 'success', 2);
    await insertAttempt(event, b.id, 'timeout', 1, null);
    await insertAttempt(event, a.id, 'success', 0);
    await insertAttempt(event, a.id, 'http_error', 0);

    const { data, errors } = await call<{ receiverId: string; hours: Hour[] }[]>(HISTORY, { hours: 3 });
    expect(errors).to.deep.equal([]);
    const of = (id: string) => data!.find((r) => r.receiverId === id)!.hours.map((h) => [h.attempts, h.successes]);
    expect(of(a.id)).to.deep.equal([
      [1, 1],
      [0, 0],
      [2, 1],
    ]);
    expect(
      (await call<{ receiverId: string; hours: Hour[] }[]>(HISTORY, { hours: 6 }))
        .data!.find((r) => r.receiverId === a.id)!
        .hours.map((h) => h.attempts),
    ).to.deep.equal([1, 0, 1, 1, 0, 2]);
    expect(of(b.id)).to.deep.equal([
      [0, 0],
      [1, 0],
      [0, 0],
    ]);
    expect(of(idle.id)).to.deep.equal([
      [0, 0],
      [0, 0],
      [0, 0],
    ]);
    const hours = data![0]!.hours.map((h) => Date.parse(h.hour));
    expect(hours[1]! - hours[0]!).to.equal(3_600_000);
    expect(new Date(hours[2]!).toISOString().slice(14)).to.equal('00:00.000Z');
    expect((await call(HISTORY)).data).to.have.length(3); // 24 h by default
    expect((await call<{ hours: Hour[] }[]>(HISTORY)).data![0]!.hours).to.have.length(24);

    const statements: string[] = [];
    const pool = testDb().pool;
    const recording = new Proxy(pool, {
      get: (target, name) =>
        name === 'query'
          ? (...args: unknown[]) => (
              statements.push(String(args[0])),
              (pool.query as (...a: unknown[]) => unknown)(...args)
            )
          : Reflect.get(target, name),
    }) as Pool;
    expect(await readDeliveryHistory(recording, 24)).to.have.length(3);
    expect(statements).to.have.length(1);

    expect((await call(HISTORY, { hours: 0 })).codes).to.deep.equal(['BAD_USER_INPUT']);
    expect((await call(HISTORY, { hours: 169 })).codes).to.deep.equal(['BAD_USER_INPUT']);
    expect((await call(HISTORY, {}, reader)).codes).to.deep.equal(['FORBIDDEN']);
  });

  it("filters a receiver's attempts by outcome and names each attempt's event type", async () => {
    const r = await stack.addReceiver('http://127.0.0.1:9/outcomes');
    const event = await insertBareEvent();
    await insertAttempt(event, r.id, 'success', 0);
    await insertAttempt(event, r.id, 'timeout', 0, null);
    const query = `query($id: ID!, $outcome: DeliveryOutcome) { deliveryAttempts(receiverId: $id, outcome: $outcome) { outcome eventType } }`;
    expect((await call(query, { id: r.id }, reader)).data).to.deep.equal([
      { outcome: 'TIMEOUT', eventType: 'LEARNING_OPPORTUNITY_PUBLISHED' },
      { outcome: 'SUCCESS', eventType: 'LEARNING_OPPORTUNITY_PUBLISHED' },
    ]);
    expect((await call(query, { id: r.id, outcome: 'SUCCESS' }, reader)).data).to.deep.equal([
      { outcome: 'SUCCESS', eventType: 'LEARNING_OPPORTUNITY_PUBLISHED' },
    ]);
    expect((await call(query, { id: r.id, outcome: 'REDIRECT' }, reader)).data).to.deep.equal([]);
  });

  it('lists dead letters and replays one of them, then all, as `deliveries replay-dead` does', async () => {
    const r = await stack.addReceiver('http://127.0.0.1:9/dead');
    const [one, two, three] = [await insertBareEvent(), await insertBareEvent(), await insertBareEvent()];
    for (const eventId of [one, two, three])
      await insertDeadLetter(stack.boss, { eventId, receiverId: r.id, attempts: 4 });
    const listed = await call<{ eventId: string }[]>(DEAD, { id: r.id });
    expect(listed.data!.map((l) => l.eventId)).to.deep.equal([one, two, three]);
    expect(listed.data![0]).to.include({ eventType: 'LEARNING_OPPORTUNITY_PUBLISHED', receiverId: r.id, attempts: 4 });

    expect((await call(REPLAY, { id: r.id, eventId: two })).data).to.deep.equal({ replayed: 1, remaining: 2 });
    expect((await jobs(DELIVERY_QUEUE, { receiverId: r.id })).map((j) => j.data.eventId)).to.deep.equal([two]);
    expect((await call<{ eventId: string }[]>(DEAD, { id: r.id })).data!.map((l) => l.eventId)).to.deep.equal([
      one,
      three,
    ]);
    expect((await call(REPLAY, { id: r.id })).data).to.deep.equal({ replayed: 2, remaining: 0 });
    expect(await jobs(DEAD_LETTER_QUEUE, { receiverId: r.id })).to.deep.equal([]);

    expect((await call(REPLAY, { id: '00000000-0000-4000-8000-000000000000' })).codes).to.deep.equal(['NOT_FOUND']);
    expect((await call(DEAD, { id: r.id }, reader)).codes).to.deep.equal(['FORBIDDEN']);
    expect((await call(REPLAY, { id: r.id }, reader)).codes).to.deep.equal(['FORBIDDEN']);
  });

  it('skips a dead letter whose record the receiver already has newer, says so, and sends it with includeSuperseded', async () => {
    const r = await stack.addReceiver('http://127.0.0.1:9/superseded');
    // Versions 1 and 2 of one record; version 2 reached the receiver (its lane says so).
    const { rows } = await testDb().pool.query<{ id: string; version: string }>(
      `insert into event (id, type, resource_id, version, occurred_at, body)
       select gen_random_uuid(), 'LEARNING_OPPORTUNITY_UPDATED', r.id, v, now(), '{}'
         from (select gen_random_uuid() as id) r, generate_series(1, 2) v
       returning id, version::text`,
    );
    const [v1, v2] = [rows.find((e) => e.version === '1')!.id, rows.find((e) => e.version === '2')!.id];
    await testDb().pool.query(
      `insert into delivery_lane (receiver_id, resource_id, queued_version, delivered_version)
       select $1, resource_id, 2, 2 from event where id = $2`,
      [r.id, v2],
    );
    await insertDeadLetter(stack.boss, { eventId: v1, receiverId: r.id, attempts: 8 });

    expect((await call(REPLAY_ALL, { id: r.id })).data).to.deep.equal({ replayed: 0, superseded: 1, remaining: 0 });
    expect(await jobs(DELIVERY_QUEUE, { receiverId: r.id })).to.deep.equal([]);
    const { rows: attempts } = await testDb().pool.query<{ outcome: string }>(
      'select outcome from delivery_attempt where receiver_id = $1 and event_id = $2',
      [r.id, v1],
    );
    expect(attempts.map((a) => a.outcome)).to.deep.equal(['superseded']);

    // Told to, it sends the old version anyway.
    await insertDeadLetter(stack.boss, { eventId: v1, receiverId: r.id, attempts: 8 });
    expect((await call(REPLAY_ALL, { id: r.id, include: true })).data).to.deep.equal({
      replayed: 1,
      superseded: 0,
      remaining: 0,
    });
    expect((await jobs(DELIVERY_QUEUE, { receiverId: r.id })).map((j) => j.data.eventId)).to.deep.equal([v1]);
  });

  it('lists stored events by type and resource (test events only when asked for) and tells the caller its scopes', async () => {
    const r = await stack.addReceiver('http://127.0.0.1:9/events');
    const test = (
      await call<{ eventId: string }>(`mutation($id: ID!) { sendTestWebhookEvent(receiverId: $id) { eventId } }`, {
        id: r.id,
      })
    ).data!.eventId;
    const bare = await insertBareEvent();
    const { rows } = await testDb().pool.query<{ resource_id: string }>('select resource_id from event where id = $1', [
      bare,
    ]);
    const list = `query($type: EventType, $resourceId: ID) { webhookEvents(type: $type, resourceId: $resourceId) { id type resourceId } }`;
    const ids = async (variables: Record<string, unknown>) =>
      (await call<{ id: string }[]>(list, variables, reader)).data!.map((e) => e.id);
    expect(await ids({}))
      .to.include(bare)
      .and.not.include(test);
    expect(await ids({ type: 'WEBHOOK_TEST' })).to.deep.equal([test]);
    expect(await ids({ resourceId: rows[0]!.resource_id })).to.deep.equal([bare]);
    expect((await call(list, {}, manager)).codes).to.deep.equal(['FORBIDDEN']);
    expect((await call(`{ currentApiKey { scopes } }`, {}, manager)).data).to.deep.equal({
      scopes: ['receivers:manage'],
    });
  });
});
