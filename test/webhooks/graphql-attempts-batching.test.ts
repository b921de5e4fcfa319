// WebhookEvent.attempts is read per page of events, not per event: a request costs one attempts
// statement per distinct set of the field's arguments, and every event still gets its own history,
// oldest first, filtered and paged on its own.
import { expect } from 'chai';
import type { Pool } from 'pg';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import type { Api } from '../../src/app/service.ts';
import { addReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { createTestKey, graphql, startTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { eventually, testSecrets } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

type Attempt = { id: string; receiverId: string; attempt: number };
type Page = { receiverId?: string; limit?: number; offset?: number };

const EVENTS = 25;
// Event i has i % 5 attempts: five events have none, the others up to four.
const attemptsOf = (i: number) => i % 5;
// Ids cross 99,999 -> 100,000 inside events' histories: ordered as numbers, not as text.
const FIRST_ATTEMPT_ID = 99_990;
const ATTEMPT_FIELDS = 'id receiverId attempt';

/** The pool the API under test uses, recording the text of every statement sent through `query`. */
function recordingPool(pool: Pool, statements: string[]): Pool {
  const query = (config: string | { text: string }, ...rest: unknown[]): unknown => {
    statements.push(typeof config === 'string' ? config : config.text);
    return (pool.query as (...args: unknown[]) => unknown)(config, ...rest);
  };
  return new Proxy(pool, { get: (target, name) => (name === 'query' ? query : Reflect.get(target, name)) as unknown });
}

describe('GraphQL: a page of events reads its attempts in one statement', () => {
  const statements: string[] = [];
  const attemptStatements = () => statements.filter((text) => text.includes('delivery_attempt'));
  let api: Api;
  let key: string;
  let receiverA: string;
  let receiverB: string;
  let eventIds: string[];
  // Each event's attempts in id order, as inserted: what the field must page from.
  const history = new Map<string, Attempt[]>();
  const expected = (eventId: string, page: Page = {}) => {
    const offset = page.offset ?? 0;
    return history
      .get(eventId)!
      .filter((a) => !page.receiverId || a.receiverId === page.receiverId)
      .slice(offset, offset + (page.limit ?? 20));
  };

  before(async () => {
    const { pool } = testDb();
    api = await startTestApi({ db: { ...testDb(), pool: recordingPool(pool, statements) } });
    key = await createTestKey(['graphql:read']);
    const receivers = { pool, secrets: testSecrets, allowPrivateTargets: true };
    receiverA = (await addReceiver(receivers, { url: 'https://example.org/a' })).id;
    receiverB = (await addReceiver(receivers, { url: 'https://example.org/b' })).id;
    const inputs = Array.from({ length: EVENTS }, () => buildLearningOpportunityInput());
    await api.writes.upsertMany(inputs.map((input) => parseLearningOpportunityInput(input)));
    await api.writes.publishMany(inputs.map((input) => input.id));
    eventIds = (await pool.query<{ id: string }>('select id from event order by id')).rows.map((r) => r.id);
    expect(eventIds).to.have.length(EVENTS);
    // The feed shows an event once no older transaction of the cluster is open (feed/feed-reads.ts):
    // other test files share the cluster.
    const feed = async () =>
      (await graphql<{ events: { results: unknown[] } }>(api, key, '{ events(limit: 100) { results { id } } }')).body
        .data?.events.results.length;
    await eventually(async () => (await feed()) === EVENTS, 15_000, 'every event in the feed');

    // Round robin over the events, so that consecutive ids belong to different events and a limit
    // applied to the whole statement instead of to each event would show.
    const rows: (Attempt & { eventId: string })[] = [];
    eventIds.forEach((id) => history.set(id, []));
    for (let round = 0; round < 4; round++) {
      eventIds.forEach((eventId, i) => {
        if (round >= attemptsOf(i)) return;
        const attempt = {
          id: String(FIRST_ATTEMPT_ID + rows.length),
          receiverId: round % 2 ? receiverB : receiverA,
          attempt: round + 1,
        };
        rows.push({ ...attempt, eventId });
        history.get(eventId)!.push(attempt);
      });
    }
    await pool.query(
      `insert into delivery_attempt (id, event_id, receiver_id, attempt, started_at, duration_ms, outcome)
        select id, event_id, receiver_id, attempt, now(), 1, 'success' from unnest($1::bigint[], $2::uuid[], $3::uuid[], $4::int[]) as a(id, event_id, receiver_id, attempt)`,
      [rows.map((r) => r.id), rows.map((r) => r.eventId), rows.map((r) => r.receiverId), rows.map((r) => r.attempt)],
    );
    expect(rows.some((r) => r.id === '99999') && rows.some((r) => r.id === '100000')).to.equal(true);
  });
  after(() => api.close());
  beforeEach(() => {
    statements.length = 0;
  });

  it('runs one attempts statement for 25 events, each event with its own attempts oldest first, [] for none', async () => {
    const res = await graphql<{ events: { results: { id: string; attempts: Attempt[] }[] } }>(
      api,
      key,
      `{ events(limit: 100) { results { id attempts { ${ATTEMPT_FIELDS} } } } }`,
    );
    expect(res.body.errors).to.equal(undefined);
    const results = res.body.data!.events.results;
    expect(results.map((e) => e.id).sort()).to.deep.equal(eventIds);
    expect(attemptStatements(), 'one statement, not one per event').to.have.length(1);
    for (const event of results) expect(event.attempts, event.id).to.deep.equal(expected(event.id));
    expect(results.filter((e) => e.attempts.length === 0)).to.have.length(5);
    expect(results.filter((e) => e.attempts.length === 4)).to.have.length(5);
  });

  it('batches by arguments: one statement per receiverId/limit/offset, each event filtered and paged on its own', async () => {
    const res = await graphql<{
      events: {
        results: {
          id: string;
          all: Attempt[];
          paged: Attempt[];
          ofB: Attempt[];
          ofAPaged: Attempt[];
          alsoAll: Attempt[];
        }[];
      };
    }>(
      api,
      key,
      `query($a: ID!, $b: ID!) { events(limit: 100) { results { id
        all: attempts { ${ATTEMPT_FIELDS} }
        alsoAll: attempts(limit: 20, offset: 0) { ${ATTEMPT_FIELDS} }
        paged: attempts(limit: 2, offset: 1) { ${ATTEMPT_FIELDS} }
        ofB: attempts(receiverId: $b) { ${ATTEMPT_FIELDS} }
        ofAPaged: attempts(receiverId: $a, limit: 1, offset: 1) { ${ATTEMPT_FIELDS} }
      } } }`,
      { a: receiverA, b: receiverB },
    );
    expect(res.body.errors).to.equal(undefined);
    // `all` and `alsoAll` ask the same thing (the defaults spelled out): they share a batch.
    expect(attemptStatements()).to.have.length(4);
    for (const event of res.body.data!.events.results) {
      expect(event.all, event.id).to.deep.equal(expected(event.id));
      expect(event.alsoAll, event.id).to.deep.equal(expected(event.id));
      expect(event.paged, event.id).to.deep.equal(expected(event.id, { limit: 2, offset: 1 }));
      expect(event.ofB, event.id).to.deep.equal(expected(event.id, { receiverId: receiverB }));
      expect(event.ofAPaged, event.id).to.deep.equal(
        expected(event.id, { receiverId: receiverA, limit: 1, offset: 1 }),
      );
    }
    const four = eventIds.find((id) => history.get(id)!.length === 4)!;
    expect(expected(four, { limit: 2, offset: 1 }).map((a) => a.attempt)).to.deep.equal([2, 3]);
    expect(expected(four, { receiverId: receiverB }).map((a) => a.attempt)).to.deep.equal([2, 4]);
  });

  it('answers each request from its own reads: an attempt recorded between two requests is in the second', async () => {
    const eventId = eventIds.find((id) => history.get(id)!.length === 1)!;
    const query = `query($id: ID!) { event(id: $id) { attempts { ${ATTEMPT_FIELDS} } } }`;
    const before = await graphql<{ event: { attempts: Attempt[] } }>(api, key, query, { id: eventId });
    expect(before.body.data!.event.attempts).to.deep.equal(expected(eventId));

    const recorded = { id: '200000', receiverId: receiverB, attempt: 2 };
    await testDb().pool.query(
      `insert into delivery_attempt (id, event_id, receiver_id, attempt, started_at, duration_ms, outcome) values ($1, $2, $3, $4, now(), 1, 'success')`,
      [recorded.id, eventId, recorded.receiverId, recorded.attempt],
    );
    history.get(eventId)!.push(recorded);
    const after = await graphql<{ event: { attempts: Attempt[] } }>(api, key, query, { id: eventId });
    expect(after.body.data!.event.attempts).to.have.length(2);
    expect(after.body.data!.event.attempts).to.deep.equal(expected(eventId));
    expect(attemptStatements()).to.have.length(2);
  });
});
