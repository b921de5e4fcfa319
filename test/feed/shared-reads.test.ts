// Long polls that follow the feed from the same cursor, woken by one commit, share one read of the
// page instead of a statement each (feed/shared-reads.ts): a hundred waiters and two commits a
// second were two hundred reads a second on the pool other keys' plain reads use.
import { expect } from 'chai';
import type { Pool, PoolClient, QueryConfig } from 'pg';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { createRecord } from '../support/factories.ts';
import { feed, head, startFeedApi, until } from './feed-support.ts';

describe('long polls woken together', function () {
  this.timeout(60_000);
  let api: Api;
  let key: string;
  let pageReads = 0;
  before(async () => {
    const pool = testDb().pool;
    const count = (config: unknown) => {
      if (typeof config === 'object' && (config as QueryConfig | null)?.name === 'feed-page') pageReads++;
    };
    // The service's pool, counting the feed's page statements (run on a connection it checks out, or by query).
    const countedClients = new WeakSet<PoolClient>();
    const counted = new Proxy(pool, {
      get(target, property) {
        if (property === 'query')
          return (config: unknown, ...rest: unknown[]) => {
            count(config);
            return (target.query as (...args: unknown[]) => unknown)(config, ...rest);
          };
        if (property === 'connect')
          return async () => {
            const client = await target.connect();
            if (!countedClients.has(client)) {
              countedClients.add(client);
              const query = client.query.bind(client) as (...args: unknown[]) => unknown;
              client.query = ((config: unknown, ...rest: unknown[]) => {
                count(config);
                return query(config, ...rest);
              }) as PoolClient['query'];
            }
            return client;
          };
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    }) as Pool;
    ({ api, key } = await startFeedApi({
      db: { ...testDb(), pool: counted, readPool: counted },
      feedMaxWaiters: 100,
      feedMaxWaitersPerKey: 100,
    }));
  });
  after(() => api.close());

  it('read the page once per wake-up, not once each, and all get the event', async () => {
    const start = await head(api, key);
    const polls = Array.from({ length: 40 }, () => feed(api, key, { after: start, wait: 30 }));
    await until(() => api.feed.waiters.waiting() === 40);
    const before = pageReads;
    const record = await createRecord(api.writes);
    const pages = await Promise.all(polls);
    for (const page of pages) expect(page.results.map((e) => e.resource.id)).to.deep.equal([record.id]);
    // One read per wake-up (more when an older transaction held the event back for a while: each
    // re-check of the horizon that saw it move wakes them once more); 40 before.
    expect(pageReads - before).to.be.within(1, 10);
  });
});
