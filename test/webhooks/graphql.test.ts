// Internal readers see stored events and every delivery attempt through GraphQL (graphql:read).
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { createTestKey, graphql } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

type Attempt = {
  id: string;
  eventId: string;
  receiverId: string;
  attempt: number;
  outcome: string;
  statusCode: number | null;
  deadLettered: boolean;
  startedAt: string;
  responseExcerpt: string | null;
};

const EVENT_QUERY = `query($id: ID!, $receiverId: ID) {
  event(id: $id) { id type occurredAt resourceId body attempts(receiverId: $receiverId) { id eventId receiverId attempt outcome statusCode deadLettered startedAt responseExcerpt } }
}`;
const ATTEMPTS_QUERY = `query($eventId: ID, $receiverId: ID, $limit: Int, $offset: Int) {
  deliveryAttempts(eventId: $eventId, receiverId: $receiverId, limit: $limit, offset: $offset) { id attempt outcome receiverId }
}`;

describe('GraphQL: events and delivery attempts', () => {
  const stack = useWebhookStack({ config: { maxAttempts: 3, backoffBaseMs: 20, backoffMaxMs: 40 } });
  let failing: TestReceiver;
  let ok: TestReceiver;
  let key: string;
  let eventId: string;
  let failingId: string;
  let okId: string;

  before(async () => {
    failing = await startReceiver();
    ok = await startReceiver();
    failing.reply({ status: 503, body: 'maintenance' });
    failingId = (await stack.addReceiver(failing.url)).id;
    okId = (await stack.addReceiver(ok.url)).id;
    key = await createTestKey(['graphql:read']);
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    eventId = (await testDb().pool.query<{ id: string }>('select id from event where resource_id = $1', [input.id]))
      .rows[0]!.id;
    await eventually(
      async () =>
        (await testDb().pool.query('select 1 from delivery_attempt where event_id = $1', [eventId])).rowCount === 4,
      20_000,
      'four attempts',
    );
  });
  after(async () => {
    await failing.close();
    await ok.close();
  });

  it('returns an event with its exact body and its attempts, oldest first', async () => {
    const res = await graphql<{
      event: { id: string; type: string; body: string; resourceId: string; occurredAt: string; attempts: Attempt[] };
    }>(stack.api, key, EVENT_QUERY, { id: eventId });
    expect(res.body.errors).to.equal(undefined);
    const event = res.body.data!.event;
    const stored = (await testDb().pool.query<{ body: string }>('select body from event where id = $1', [eventId]))
      .rows[0]!;
    expect(event).to.include({ id: eventId, type: 'LEARNING_OPPORTUNITY_PUBLISHED', body: stored.body });
    expect(event.occurredAt).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const failed = event.attempts.filter((a) => a.receiverId === failingId);
    expect(failed.map((a) => [a.attempt, a.outcome, a.statusCode, a.deadLettered, a.responseExcerpt])).to.deep.equal([
      [1, 'HTTP_ERROR', 503, false, 'maintenance'],
      [2, 'HTTP_ERROR', 503, false, 'maintenance'],
      [3, 'HTTP_ERROR', 503, true, 'maintenance'],
    ]);
    expect(
      event.attempts.filter((a) => a.receiverId === okId).map((a) => [a.attempt, a.outcome, a.statusCode]),
    ).to.deep.equal([[1, 'SUCCESS', 200]]);

    const one = await graphql<{ event: { attempts: Attempt[] } }>(stack.api, key, EVENT_QUERY, {
      id: eventId,
      receiverId: okId,
    });
    expect(one.body.data!.event.attempts).to.have.length(1);
  });

  it('lists attempts newest first, filtered by event or receiver, paged, in numeric id order', async () => {
    const byReceiver = await graphql<{ deliveryAttempts: Attempt[] }>(stack.api, key, ATTEMPTS_QUERY, {
      receiverId: failingId,
      limit: 2,
    });
    expect(byReceiver.body.data!.deliveryAttempts.map((a) => a.attempt)).to.deep.equal([3, 2]);
    const next = await graphql<{ deliveryAttempts: Attempt[] }>(stack.api, key, ATTEMPTS_QUERY, {
      receiverId: failingId,
      limit: 2,
      offset: 2,
    });
    expect(next.body.data!.deliveryAttempts.map((a) => a.attempt)).to.deep.equal([1]);
    const byEvent = await graphql<{ deliveryAttempts: Attempt[] }>(stack.api, key, ATTEMPTS_QUERY, { eventId });
    expect(byEvent.body.data!.deliveryAttempts).to.have.length(4);

    // Ids 99999 and 100000: ordered as numbers, not as text.
    const receiverId = (await stack.addReceiver('https://example.org/hook')).id;
    await testDb().pool.query(
      `insert into delivery_attempt (id, event_id, receiver_id, attempt, started_at, duration_ms, outcome) values (99999, $1, $2, 1, now(), 1, 'success'), (100000, $1, $2, 2, now(), 1, 'success')`,
      [eventId, receiverId],
    );
    const numeric = await graphql<{ deliveryAttempts: Attempt[] }>(stack.api, key, ATTEMPTS_QUERY, { receiverId });
    expect(numeric.body.data!.deliveryAttempts.map((a) => a.id)).to.deep.equal(['100000', '99999']);
  });

  it('is null for an unknown event, a 400-style error for a bad id or limit, and FORBIDDEN without graphql:read', async () => {
    expect((await graphql(stack.api, key, EVENT_QUERY, { id: randomUUID() })).body.data).to.deep.equal({ event: null });
    const bad = await graphql(stack.api, key, ATTEMPTS_QUERY, { eventId: 'nope', limit: 0 });
    expect(bad.body.errors?.[0]?.extensions?.code).to.equal('BAD_USER_INPUT');
    const limit = await graphql(stack.api, key, ATTEMPTS_QUERY, { limit: 101 });
    expect(limit.body.errors?.[0]?.extensions?.invalidParams).to.deep.equal([
      { name: 'limit', reason: 'must be an integer from 1 to 100' },
    ]);
    const readerOnly = await createTestKey(['catalog:read']);
    const forbidden = await graphql(stack.api, readerOnly, EVENT_QUERY, { id: eventId });
    expect(forbidden.body.errors?.[0]?.extensions?.code).to.equal('FORBIDDEN');
  });
});
