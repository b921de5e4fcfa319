// docs/contract.md, "Events", row by row, as a receiver sees it: which changes are delivered, and the
// delivered body byte for byte (data = the bytes of GET /v1/learning-opportunities/{id}).
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { createTestKey, getJson } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

type Body = { id: string; type: string; occurredAt: string; resource: { type: string; id: string }; data: unknown };

describe('webhook events (docs/contract.md, "Events")', () => {
  const stack = useWebhookStack();
  let receiver: TestReceiver;
  let key: string;

  before(async () => {
    receiver = await startReceiver();
    await stack.addReceiver(receiver.url);
    key = await createTestKey(['catalog:read']);
  });
  after(async () => {
    await receiver.close();
  });

  const eventsOf = async (resourceId: string) =>
    (
      await testDb().pool.query<{ id: string; type: string; version: string; body: string }>(
        'select id, type, version, body from event where resource_id = $1 order by occurred_at, id',
        [resourceId],
      )
    ).rows;
  const deliveriesOf = (resourceId: string) =>
    receiver.requests.filter((r) => (JSON.parse(r.body.toString()) as Body).resource.id === resourceId);
  /** Waits until the receiver has every stored event of the record, and returns their bodies in order. */
  async function delivered(resourceId: string): Promise<string[]> {
    const stored = await eventsOf(resourceId);
    const deadline = Date.now() + 5000;
    while (deliveriesOf(resourceId).length < stored.length && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    const bodies = deliveriesOf(resourceId).map((r) => r.body.toString('utf8'));
    expect(bodies.toSorted()).to.deep.equal(stored.map((e) => e.body).toSorted());
    return stored.map((e) => e.body);
  }
  // resource.version (docs/contract.md, "Event body") is the stored event's; test/events/resource-version.test.ts checks its values.
  const expectedBody = (
    event: { id: string; type: string; version: string },
    resourceId: string,
    occurredAt: string,
    data: string,
  ) =>
    `{"id":"${event.id}","type":"${event.type}","occurredAt":"${occurredAt}","resource":{"type":"LEARNING_OPPORTUNITY","id":"${resourceId}","version":${event.version}},"data":${data}}`;

  it('draft -> PUBLISHED delivers LEARNING_OPPORTUNITY_PUBLISHED whose data is the GET bytes', async () => {
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    const get = await getJson(stack.api, `/v1/learning-opportunities/${input.id}`, key);
    expect(get.status).to.equal(200);
    const [event] = await eventsOf(input.id);
    expect(event?.type).to.equal('LEARNING_OPPORTUNITY_PUBLISHED');
    const [body] = await delivered(input.id);
    expect(body).to.equal(expectedBody(event!, input.id, (get.body as { updatedAt: string }).updatedAt, get.text));
  });

  it('a changed published record delivers UPDATED with the new bytes; an identical save delivers nothing', async () => {
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    await stack.api.writes.upsert(
      parseLearningOpportunityInput({ ...input, title: 'Applied Data Engineering, 2nd edition' }),
    );
    await stack.api.writes.upsert(
      parseLearningOpportunityInput({ ...input, title: 'Applied Data Engineering, 2nd edition' }),
    ); // identical
    const get = await getJson(stack.api, `/v1/learning-opportunities/${input.id}`, key);
    const events = await eventsOf(input.id);
    expect(events.map((e) => e.type)).to.deep.equal(['LEARNING_OPPORTUNITY_PUBLISHED', 'LEARNING_OPPORTUNITY_UPDATED']);
    const bodies = await delivered(input.id);
    expect(bodies[1]).to.equal(
      expectedBody(events[1]!, input.id, (get.body as { updatedAt: string }).updatedAt, get.text),
    );
    expect((JSON.parse(bodies[1]!) as { data: { title: string } }).data.title).to.equal(
      'Applied Data Engineering, 2nd edition',
    );
  });

  it('PUBLISHED -> ARCHIVED delivers ARCHIVED with the archived snapshot; editing the archived record delivers nothing', async () => {
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    const archivedDoc = await stack.api.writes.archive(input.id);
    await stack.api.writes.upsert(parseLearningOpportunityInput({ ...input, title: 'Edited while archived' }));
    const events = await eventsOf(input.id);
    expect(events.map((e) => e.type)).to.deep.equal([
      'LEARNING_OPPORTUNITY_PUBLISHED',
      'LEARNING_OPPORTUNITY_ARCHIVED',
    ]);
    const bodies = await delivered(input.id);
    const archived = JSON.parse(archivedDoc) as { status: string; updatedAt: string };
    expect(archived.status).to.equal('ARCHIVED');
    expect(bodies[1]).to.equal(expectedBody(events[1]!, input.id, archived.updatedAt, archivedDoc));
  });

  it('ARCHIVED -> PUBLISHED delivers PUBLISHED again', async () => {
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    await stack.api.writes.archive(input.id);
    await stack.api.writes.publish(input.id);
    expect((await eventsOf(input.id)).map((e) => e.type)).to.deep.equal([
      'LEARNING_OPPORTUNITY_PUBLISHED',
      'LEARNING_OPPORTUNITY_ARCHIVED',
      'LEARNING_OPPORTUNITY_PUBLISHED',
    ]);
    await delivered(input.id);
  });

  it('deleting a published or an archived record delivers DELETED with data null', async () => {
    for (const archiveFirst of [false, true]) {
      const input = buildLearningOpportunityInput();
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await stack.api.writes.publish(input.id);
      if (archiveFirst) await stack.api.writes.archive(input.id);
      await stack.api.writes.delete(input.id);
      const events = await eventsOf(input.id);
      expect(events.at(-1)?.type).to.equal('LEARNING_OPPORTUNITY_DELETED');
      const bodies = await delivered(input.id);
      const deleted = JSON.parse(bodies.at(-1)!) as Body;
      expect(deleted.data).to.equal(null);
      expect(bodies.at(-1)).to.match(/,"data":null\}$/);
      expect(deleted.resource).to.deep.equal({
        type: 'LEARNING_OPPORTUNITY',
        id: input.id,
        version: archiveFirst ? 3 : 2,
      });
    }
  });

  it('drafts emit nothing: creating, changing and deleting a draft deliver no event', async () => {
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.upsert(parseLearningOpportunityInput({ ...input, title: 'Draft, changed' }));
    await stack.api.writes.delete(input.id);
    expect(await eventsOf(input.id)).to.deep.equal([]);
    // A later publication of another record arrives, and nothing of the draft ever did.
    const sentinel = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(sentinel));
    await stack.api.writes.publish(sentinel.id);
    await delivered(sentinel.id);
    expect(deliveriesOf(input.id)).to.deep.equal([]);
  });
});
