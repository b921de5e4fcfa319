// The feed's guarantee: a reader following `next` sees every committed event exactly once, also
// when transactions commit in another order than they started (docs/contract.md, "The change feed").
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { createRecord } from '../support/factories.ts';
import { collect, feed, head, startFeedApi } from './feed-support.ts';
import { insertRawEvent } from './raw-events.ts';

describe('change feed commit order', function () {
  this.timeout(60_000);
  let api: Api;
  let key: string;
  before(async () => ({ api, key } = await startFeedApi()));
  after(() => api.close());

  it('an event of an earlier transaction still open holds back later ones; after its commit both appear, nothing skipped', async () => {
    const start = await head(api, key);
    const early = await testDb().pool.connect();
    try {
      await early.query('begin');
      const earlyEvent = await insertRawEvent(early); // takes the lower transaction id
      const later = await createRecord(api.writes); // starts later, commits first

      const before = await feed(api, key, { after: start });
      expect(before.results, 'nothing readable past the open transaction').to.deep.equal([]);
      expect(before.pagination.next).to.equal(start);

      await early.query('commit');
      const after = await collect(api, key, before.pagination.next, 2);
      expect(after.events.map((e) => e.id)).to.have.length(2);
      expect(after.events[0]!.id).to.equal(earlyEvent);
      expect(after.events[1]!.resource.id).to.equal(later.id);
    } finally {
      early.release();
    }
  });

  it('many concurrent writers committing out of order, one tight poller: 0 missed, 0 twice', async () => {
    const start = await head(api, key);
    const writers = 8;
    const perWriter = 25;
    const eventsIn = (i: number) => 1 + (i % 3); // events in a writer's i-th transaction
    const total = writers * Array.from({ length: perWriter }, (_, i) => eventsIn(i)).reduce((a, b) => a + b, 0);
    const seen: string[] = [];
    let cursor = start;
    // Polls without waiting until it has read as many events as were written (or gives up: then the
    // comparison below shows what it missed).
    const poller = (async () => {
      const deadline = Date.now() + 30_000;
      while (seen.length < total && Date.now() < deadline) {
        const page = await feed(api, key, { after: cursor, limit: 7 });
        seen.push(...page.results.map((e) => e.id));
        cursor = page.pagination.next;
      }
    })();
    const written: string[] = [];
    await Promise.all(
      Array.from({ length: writers }, async () => {
        for (let i = 0; i < perWriter; i++) {
          const client = await testDb().pool.connect();
          try {
            await client.query('begin');
            const count = eventsIn(i);
            const ids: string[] = [];
            for (let j = 0; j < count; j++) {
              ids.push(await insertRawEvent(client));
              // Hold the transaction open a little, so that later ones overtake it.
              await client.query('select pg_sleep($1)', [Math.random() * 0.004]);
            }
            await client.query('commit');
            written.push(...ids);
          } finally {
            client.release();
          }
        }
      }),
    );
    expect(written).to.have.length(total);
    await poller;

    const full = (await collect(api, key, start, total)).events.map((e) => e.id);
    const expected = new Set(written);
    const polled = seen.filter((id) => expected.has(id));
    expect(new Set(full.filter((id) => expected.has(id))).size, 'full read has every event').to.equal(written.length);
    expect(polled.length - new Set(polled).size, 'seen twice').to.equal(0);
    expect(
      written.filter((id) => !polled.includes(id)),
      'missed',
    ).to.deep.equal([]);
    // Same order as the full read.
    expect(polled).to.deep.equal(full.filter((id) => expected.has(id)));
  });
});
