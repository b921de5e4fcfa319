// wait=N: a request with nothing after its cursor is answered when an event commits, at the end of
// the wait, or at once on shutdown; it holds no pooled connection while it waits; and no more than
// FEED_MAX_WAITERS requests wait at a time.
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { createApiKey, revokeApiKey } from '../../src/auth/api-keys.ts';
import { API_KEY_CHANNEL } from '../../src/auth/key-cache.ts';
import { testDb } from '../hooks.ts';
import { getJson, startTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';
import { feed, head, startFeedApi, until } from './feed-support.ts';
import { insertRawEvent } from './raw-events.ts';

describe('change feed long poll', function () {
  this.timeout(60_000);
  let api: Api;
  let key: string;
  before(async () => ({ api, key } = await startFeedApi({ feedMaxWaiters: 3, feedMaxWaitersPerKey: 3 })));
  after(() => api.close());

  it('answers as soon as an event commits, with that event', async () => {
    const start = await head(api, key);
    const waiting = feed(api, key, { after: start, wait: 30 });
    await until(() => api.feed.waiters.waiting() === 1);
    const committedAt = Date.now();
    const record = await createRecord(api.writes);
    const page = await waiting;
    // Well before the 30 s wait ends: the commit woke it (in the full suite another file's transaction
    // on the same server can hold the cluster-wide horizon back for seconds on a loaded machine; the
    // benchmark measures the latency itself).
    expect(Date.now() - committedAt).to.be.below(15_000);
    expect(page.results.map((e) => e.resource.id)).to.deep.equal([record.id]);
    expect(api.feed.waiters.waiting()).to.equal(0);
  });

  it('also wakes when an older transaction that wrote no event ends (it held the horizon back, and sends no NOTIFY)', async () => {
    const start = await head(api, key);
    const holder = await testDb().pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select pg_current_xact_id()'); // takes a transaction id: holds the horizon
      const waiting = feed(api, key, { after: start, wait: 30 });
      await until(() => api.feed.waiters.waiting() === 1);
      const record = await createRecord(api.writes); // NOTIFY, but not readable yet
      await holder.query('commit');
      const endedAt = Date.now();
      const page = await waiting;
      expect(Date.now() - endedAt).to.be.below(15_000); // well before the 30 s wait ends
      expect(page.results.map((e) => e.resource.id)).to.deep.equal([record.id]);
    } finally {
      holder.release();
    }
  });

  it('answers an empty page with the same cursor when the wait ends', async () => {
    const start = await head(api, key);
    const began = Date.now();
    const page = await feed(api, key, { after: start, wait: 1 });
    expect(Date.now() - began).to.be.within(900, 5000);
    expect(page.results).to.deep.equal([]);
    expect(page.pagination.next).to.equal(start);
  });

  it('holds no pooled connection while waiting, and refuses more than FEED_MAX_WAITERS with 503 and Retry-After', async () => {
    const start = await head(api, key);
    const pool = testDb().pool;
    const waiting = [1, 2, 3].map(() => feed(api, key, { after: start, wait: 20 }));
    await until(() => api.feed.waiters.waiting() === 3);
    // The service's other work (the rate limiter's sync, a waiter's re-check) takes a connection for
    // a moment; a waiter holding one would hold it for its whole 20 s wait.
    const inUse = () => pool.totalCount - pool.idleCount;
    let fewest = inUse();
    for (const deadline = Date.now() + 2000; fewest > 0 && Date.now() < deadline; fewest = Math.min(fewest, inUse()))
      await new Promise((resolve) => setTimeout(resolve, 2));
    expect(fewest, 'fewest connections in use while three requests wait').to.equal(0);
    expect(api.feed.waiters.waiting()).to.equal(3);
    const refused = await getJson(api, `/v1/events?after=${start}&wait=20`, key);
    expectProblem(refused, 503);
    expect(refused.headers.get('retry-after')).to.equal('1');
    // A request without wait is still served at once.
    expect((await feed(api, key, { after: start })).results).to.deep.equal([]);
    const client = await pool.connect();
    try {
      await client.query('begin');
      await insertRawEvent(client);
      await client.query('commit');
    } finally {
      client.release();
    }
    for (const page of await Promise.all(waiting)) expect(page.results).to.have.length(1);
  });

  it('answers a key revoked while its long poll waits with 401 at once, freeing its slot (it waited out its 30 s)', async () => {
    const revoked = await createApiKey(testDb().orm.em.fork(), {
      name: 'revoked while waiting',
      scopes: ['catalog:read'],
    });
    const start = await head(api, key);
    const began = Date.now();
    const waiting = getJson(api, `/v1/events?after=${start}&wait=30`, revoked.key);
    await until(() => api.feed.waiters.waiting() === 1);
    await revokeApiKey(testDb().orm.em.fork(), revoked.id);
    const res = await waiting;
    expect(Date.now() - began, 'not the 30 s wait').to.be.below(10_000);
    expectProblem(res, 401);
    expect(api.feed.waiters.waiting()).to.equal(0);
  });

  it('keeps a long poll waiting when its key could not be checked again (only a refusal ends it)', async () => {
    const start = await head(api, key);
    const waiting = getJson(api, `/v1/events?after=${start}&wait=3`, key);
    await until(() => api.feed.waiters.waiting() === 1);
    // Every look-up of a key fails for a moment (as while the database comes back), and a change
    // of keys is announced: the re-check cannot answer, which says nothing against this key.
    const { pool } = testDb();
    await pool.query('alter table api_key rename to api_key_away');
    try {
      await pool.query(`select pg_notify('${API_KEY_CHANNEL}', '')`);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(api.feed.waiters.waiting(), 'still waiting').to.equal(1);
    } finally {
      await pool.query('alter table api_key_away rename to api_key');
    }
    const res = await waiting;
    expect(res.status, res.text).to.equal(200);
    expect((res.body as { results: unknown[] }).results).to.deep.equal([]);
  });

  it('shutdown answers waiting requests at once', async () => {
    const own = await startTestApi();
    const start = await head(own, key);
    const began = Date.now();
    const waiting = feed(own, key, { after: start, wait: 30 });
    await until(() => own.feed.waiters.waiting() === 1);
    await own.close();
    const page = await waiting;
    expect(Date.now() - began).to.be.below(10_000); // not the 30 s wait
    expect(page.results).to.deep.equal([]);
    expect(page.pagination.next).to.equal(start);
  });
});
