// Two API and two worker processes (src/app/main.ts) on one database: writes through either API, reads
// from either, deliveries by either worker. Nothing is lost, and with a receiver that always
// answers 200 nothing is delivered twice (at-least-once retries would repeat the same event id).
import { expect } from 'chai';
import { addReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { DELIVERY_QUEUE } from '../../src/webhooks/queue/boss.ts';
import { testDb } from '../hooks.ts';
import { createTestKey } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { type RoleProcess, startRoleProcess } from '../support/role-process.ts';
import { eventually, jobs, resetWebhooks, TEST_SECRET_KEY, testSecrets } from '../support/webhooks.ts';

const UPSERT_MANY =
  'mutation ($inputs: [LearningOpportunityInput!]!) { upsertLearningOpportunities(inputs: $inputs) { id } }';
const PUBLISH_MANY = 'mutation ($ids: [ID!]!) { publishLearningOpportunities(ids: $ids) { id } }';
const UPSERT = 'mutation ($input: LearningOpportunityInput!) { upsertLearningOpportunity(input: $input) { id } }';

describe('two API and two worker processes on one database', function () {
  this.timeout(120_000);
  let receiver: TestReceiver;
  const apis: RoleProcess[] = [];
  const workers: RoleProcess[] = [];

  before(async () => {
    await resetWebhooks();
    receiver = await startReceiver();
    await addReceiver(
      { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true },
      { url: receiver.url, secret: 'a-shared-secret-of-enough-length' },
    );
    const env = {
      SECRET_ENCRYPTION_KEY: TEST_SECRET_KEY,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_BACKOFF_BASE_MS: '100',
      WEBHOOK_BACKOFF_MAX_MS: '1000',
      RATE_LIMIT_PER_MINUTE: '0',
    };
    for (let i = 0; i < 2; i++) {
      apis.push(await startRoleProcess('api', env));
      workers.push(await startRoleProcess('worker', env));
    }
  });
  after(async () => {
    for (const p of [...apis, ...workers]) expect(await p.stop(), 'a clean exit after SIGTERM').to.equal(0);
    await receiver.close();
    await resetWebhooks();
  });

  async function gql(api: RoleProcess, key: string, query: string, variables: Record<string, unknown>): Promise<void> {
    const res = await fetch(`${api.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { errors?: unknown };
    expect(body.errors, JSON.stringify(body.errors)).to.equal(undefined);
  }

  it('serves every write and read on either API, and delivers every event exactly once through either worker', async () => {
    const key = await createTestKey(['catalog:write', 'catalog:read']);
    const inputs = Array.from({ length: 20 }, () => buildLearningOpportunityInput());
    const ids = inputs.map((i) => i.id);
    await gql(apis[0]!, key, UPSERT_MANY, { inputs });
    await Promise.all([
      gql(apis[0]!, key, PUBLISH_MANY, { ids: ids.slice(0, 10) }),
      gql(apis[1]!, key, PUBLISH_MANY, { ids: ids.slice(10) }),
    ]);
    // Concurrent single edits through both APIs: ten UPDATED events.
    await Promise.all(
      inputs
        .slice(0, 10)
        .map((input, i) => gql(apis[i % 2]!, key, UPSERT, { input: { ...input, title: `Edited ${i}` } })),
    );

    for (const id of ids) {
      const answers = await Promise.all(
        apis.map((api) =>
          fetch(`${api.url}/v1/learning-opportunities/${id}`, { headers: { authorization: `Bearer ${key}` } }).then(
            async (r) => [r.status, await r.text()] as const,
          ),
        ),
      );
      expect(answers[0]![0]).to.equal(200);
      expect(answers[1], 'the same bytes from both APIs').to.deep.equal(answers[0]);
    }

    const { rows } = await testDb().pool.query<{ id: string }>(
      'select id from event where resource_id = any($1::uuid[])',
      [ids],
    );
    expect(rows).to.have.length(30); // 20 PUBLISHED + 10 UPDATED
    const expected = new Set(rows.map((r) => r.id));
    const deliveredIds = () =>
      receiver.requests.map((r) => String(r.headers['x-service-event-id'])).filter((id) => expected.has(id));
    await eventually(async () => new Set(deliveredIds()).size === expected.size, 30_000, 'every event delivered');
    // Settled: no delivery job of these events is left, so no further delivery can come.
    await eventually(
      async () => (await jobs(DELIVERY_QUEUE)).every((j) => !expected.has(String(j.data.eventId))),
      10_000,
      'every delivery settled',
    );
    expect(deliveredIds().length, 'no event delivered twice').to.equal(expected.size);
  });
});
