// The receiver kit repairs gaps from the change feed: the feed's items are the very bytes a webhook
// receiver got, and repairFromFeed hands over exactly the events after the last one processed; with
// a receiver's view, those of the view's feed, where a record that left the view is a LEFT_VIEW
// event that removes it from the copy.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import {
  FeedGapError,
  MemorySeenStore,
  MemoryVersionStore,
  repairFromFeed,
  type WebhookEvent,
} from '@lods/receiver-kit';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson } from '../support/api.ts';
import { buildLearningOpportunityInput, createRecord } from '../support/factories.ts';
import { feedSettled } from '../support/feed-horizon.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { resetWebhooks, useWebhookStack } from '../support/webhooks.ts';
import { collect, feed, head } from '../feed/feed-support.ts';

describe('receiver kit: repairFromFeed', function () {
  this.timeout(30_000);
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
    await resetWebhooks();
  });

  it('feed items are byte for byte the delivered webhook bodies', async () => {
    const start = await head(stack.api, key);
    await createRecord(stack.api.writes);
    const [delivered] = await receiver.waitFor(1);
    const page = await feed(stack.api, key, { after: start, wait: 5 });
    expect(page.results).to.have.length(1);
    expect(page.text).to.contain(`"results":[${delivered!.body.toString('utf8')}]`);
    expect(page.results[0]!.id).to.equal(delivered!.headers['x-service-event-id']);
  });

  it('hands over the events after the last one processed, skips what the seen store has, and continues from its cursor', async () => {
    const start = await head(stack.api, key);
    for (let i = 0; i < 4; i++) await createRecord(stack.api.writes);
    const { events, next: end } = await collect(stack.api, key, start, 4);
    const handled: WebhookEvent[] = [];
    const dedupe = new MemorySeenStore();
    await dedupe.claim(events[2]!.id); // already taken by a delivery
    const base = {
      baseUrl: stack.api.url,
      apiKey: key,
      handle: (e: WebhookEvent) => void handled.push(e),
      dedupe,
      limit: 2,
    };

    const repaired = await repairFromFeed({ ...base, lastEventId: events[0]!.id });
    expect(handled.map((e) => e.id)).to.deep.equal([events[1]!.id, events[3]!.id]);
    expect(repaired).to.deep.include({ handled: 2, skipped: 1 });

    const later = await createRecord(stack.api.writes);
    await collect(stack.api, key, end, 1);
    handled.length = 0;
    const next = await repairFromFeed({ ...base, after: repaired.cursor });
    expect(handled.map((e) => e.resource.id)).to.deep.equal([later.id]);
    expect(next.handled).to.equal(1);
  });

  it('with `view`, hands over the events of the view only: a record an update took out comes as LEFT_VIEW, and the copy ends equal to the view', async () => {
    // A city of this test's own: the view holds only its records, whatever else the database holds.
    const city = `Repairville ${randomUUID().slice(0, 8)}`;
    const view = `city=${encodeURIComponent(city)}`;
    const inCity = (c: string) => ({
      sessions: [
        {
          id: randomUUID(),
          startsAt: '2027-03-01T09:00:00.000Z',
          endsAt: null,
          timezone: 'Europe/Berlin',
          format: 'IN_PERSON',
          location: { name: 'Hall', address: '1 Main Street', city: c, country: 'DE' },
          capacity: 10,
        },
      ],
    });
    await feedSettled(testDb().pool);
    const headRes = await getJson(stack.api, `/v1/events/head?view=${encodeURIComponent(view)}`, key);
    expect(headRes.status, headRes.text).to.equal(200);
    const start = (headRes.body as { cursor: string }).cursor;

    const stays = await createRecord(stack.api.writes, inCity(city));
    const leaves = await createRecord(stack.api.writes, inCity(city));
    const elsewhere = await createRecord(stack.api.writes, inCity(`Elsewhere ${city}`));
    await stack.api.writes.upsert(
      parseLearningOpportunityInput(buildLearningOpportunityInput({ id: leaves.id, ...inCity(`Moved ${city}`) })),
    );
    await feedSettled(testDb().pool);

    const copy = new Map<string, unknown>();
    const handled: string[] = [];
    const repaired = await repairFromFeed({
      baseUrl: stack.api.url,
      apiKey: key,
      after: start,
      view,
      versions: new MemoryVersionStore(),
      handle: (e) => {
        handled.push(`${e.type} ${e.resource.id}`);
        if (e.type === 'LEARNING_OPPORTUNITY_DELETED' || e.type === 'LEARNING_OPPORTUNITY_LEFT_VIEW') {
          expect(e.data).to.equal(null);
          copy.delete(e.resource.id);
        } else copy.set(e.resource.id, e.data);
      },
    });
    expect(handled).to.deep.equal([
      `LEARNING_OPPORTUNITY_PUBLISHED ${stays.id}`,
      `LEARNING_OPPORTUNITY_PUBLISHED ${leaves.id}`,
      `LEARNING_OPPORTUNITY_LEFT_VIEW ${leaves.id}`,
    ]);
    expect(handled.join(' ')).to.not.include(elsewhere.id);
    expect(repaired.handled).to.equal(3);
    expect([...copy.keys()]).to.deep.equal([stays.id]);
    const list = await getJson(stack.api, `/v1/learning-opportunities?${view}`, key);
    expect((list.body as { results: { id: string }[] }).results.map((r) => r.id)).to.deep.equal([...copy.keys()]);
  });

  it('says when the starting point is no longer retained', async () => {
    const error = await repairFromFeed({
      baseUrl: stack.api.url,
      apiKey: key,
      lastEventId: '00000000-0000-4000-8000-000000000000',
      handle: () => {},
    }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(FeedGapError);
    expect((error as Error).message).to.match(/full walk/);
  });
});
