// What long polls may cost and take. Behind one idle transaction (which holds the cluster-wide
// horizon back, in another database even), waiting requests re-check the horizon through the
// process's one shared re-check: the service database's transaction rate stays small however many
// wait, and they are all answered once the transaction ends. And one API key cannot take every
// waiting slot (FEED_MAX_WAITERS_PER_KEY): beyond its share it gets 429, another key still waits.
import { expect } from 'chai';
import pg from 'pg';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';
import { feed, head, startFeedApi, until } from './feed-support.ts';

const WAITERS = 40;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A connection to the test server's admin database: not the service's database. */
function adminClient(): pg.Client {
  const { adminUrl } = JSON.parse(process.env.LODS_TEST_POSTGRES!) as { adminUrl: string };
  return new pg.Client({ connectionString: adminUrl });
}

describe('change feed long poll limits', function () {
  this.timeout(60_000);

  describe('behind an idle transaction', () => {
    let api: Api;
    let key: string;
    before(async () => ({ api, key } = await startFeedApi({ feedMaxWaiters: 100, feedMaxWaitersPerKey: 100 })));
    after(() => api.close());

    it(`${WAITERS} waiting requests add under 20 transactions a second to the service database, and are all answered when the transaction ends`, async () => {
      const database = (await testDb().pool.query<{ name: string }>('select current_database() as name')).rows[0]!.name;
      const holder = adminClient();
      const stats = adminClient();
      await holder.connect();
      await stats.connect();
      // pg_stat_database is flushed by each backend about once a second: measured over seconds. A
      // backend that goes idle flushes its last second's counts up to 10 s later (PostgreSQL's
      // PGSTAT_IDLE_INTERVAL): the earlier tests' connections of this database did (hundreds of
      // transactions, after commit-order.test.ts, landed in one window), so the windows start after that.
      const commits = async () =>
        Number(
          (
            await stats.query<{ n: string }>('select xact_commit::text as n from pg_stat_database where datname = $1', [
              database,
            ])
          ).rows[0]!.n,
        );
      const rateOver = async (ms: number) => {
        const before = await commits();
        const began = performance.now();
        await sleep(ms);
        return ((await commits()) - before) / ((performance.now() - began) / 1000);
      };
      try {
        const start = await head(api, key);
        // The wait comes before the transaction: the horizon is the whole cluster's, and other test
        // files running beside this one long-poll for their own events (within 15 s).
        await sleep(11_000);
        await holder.query('begin');
        await holder.query('select pg_current_xact_id()'); // takes a transaction id: holds the horizon back
        // What the service database does anyway (this API's own background work, and other tests'
        // in a serial run), beside the waiters' share.
        const idle = await rateOver(3000);
        const waiting = Array.from({ length: WAITERS }, () => feed(api, key, { after: start, wait: 30 }));
        await until(() => api.feed.waiters.waiting() === WAITERS);
        const record = await createRecord(api.writes); // NOTIFY: every request re-reads once, and its event is pending
        await sleep(1500);
        const rate = await rateOver(3000);
        expect(api.feed.waiters.waiting(), 'still waiting').to.equal(WAITERS);
        expect(
          rate - idle,
          `transactions per second on the service database: ${rate.toFixed(1)} with the waiters, ${idle.toFixed(1)} without`,
        ).to.be.below(20);
        await holder.query('commit');
        const endedAt = Date.now();
        for (const page of await Promise.all(waiting))
          expect(page.results.map((e) => e.resource.id)).to.deep.equal([record.id]);
        expect(Date.now() - endedAt).to.be.below(5000);
      } finally {
        await holder.end();
        await stats.end();
      }
    });
  });

  describe('per key', () => {
    let api: Api;
    let key: string;
    // FEED_MAX_WAITERS 20 gives each key a tenth: 2.
    before(async () => ({ api, key } = await startFeedApi({ feedMaxWaiters: 20 })));
    after(() => api.close());

    it('one key cannot fill every slot: beyond FEED_MAX_WAITERS_PER_KEY it gets 429 with Retry-After, another key still waits', async () => {
      expect(api.feed.waiters.waiting()).to.equal(0);
      const start = await head(api, key);
      const gone = new AbortController();
      const own = [1, 2].map(() =>
        getJson(api, `/v1/events?after=${start}&wait=20`, key, { signal: gone.signal }).catch(() => null),
      );
      await until(() => api.feed.waiters.waiting() === 2);
      const refused = await getJson(api, `/v1/events?after=${start}&wait=20`, key);
      const problem = expectProblem(refused, 429);
      expect(problem.detail).to.include('FEED_MAX_WAITERS_PER_KEY');
      expect(refused.headers.get('retry-after')).to.equal('1');
      // A request without wait is still served at once, and another key takes a slot.
      expect((await feed(api, key, { after: start })).results).to.deep.equal([]);
      const other = await createTestKey(['catalog:read'], testDb(), 1_000_000);
      const theirs = feed(api, other, { after: start, wait: 20 });
      await until(() => api.feed.waiters.waiting() === 3);
      // A slot given back (the client went away) is the key's again.
      gone.abort();
      await Promise.all(own);
      await until(() => api.feed.waiters.waiting() === 1);
      const again = getJson(api, `/v1/events?after=${start}&wait=20`, key);
      await until(() => api.feed.waiters.waiting() === 2);
      const record = await createRecord(api.writes);
      for (const page of [await theirs, (await again).body as Awaited<typeof theirs>])
        expect(page.results.map((e) => e.resource.id)).to.deep.equal([record.id]);
    });
  });
});
