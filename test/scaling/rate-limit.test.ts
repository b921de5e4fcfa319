// Per-key rate limits of /v1 (docs/contract.md, "Rate limits"): RateLimit-Policy and RateLimit headers on every
// answer to a known key, 429 /problems/rate-limited with Retry-After over the limit (without
// running the read), the key checked first, a per-key override, the feed in the same budget as the
// records, and a limit shared by two API processes on one database.
import { expect } from 'chai';
import { createApiKey, revokeApiKey } from '../../src/auth/api-keys.ts';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson, startTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';
import { type RoleProcess, startRoleProcess } from '../support/role-process.ts';
import { until } from '../feed/feed-support.ts';
import { feedSettled } from '../support/feed-horizon.ts';

describe('rate limits of /v1', () => {
  let api: Api;
  let path: string;
  before(async () => {
    api = await startTestApi({ rateLimit: { perMinute: 4, syncMs: 1000 } });
    path = `/v1/learning-opportunities/${(await createRecord(api.writes)).id}`;
  });
  after(() => api.close());

  it('counts every request of a key, a 304 and a 400 included, then answers 429 with Retry-After', async () => {
    const key = await createTestKey(['catalog:read']);
    const first = await getJson(api, path, key);
    expect(first.headers.get('ratelimit-policy')).to.equal('"default";q=4;w=60');
    expect(first.headers.get('ratelimit')).to.match(/^"default";r=3;t=([1-9]|[1-5][0-9]|60)$/);
    const notModified = await getJson(api, path, key, { headers: { 'if-none-match': first.headers.get('etag')! } });
    expect(notModified.status).to.equal(304);
    expect(notModified.headers.get('ratelimit')).to.match(/^"default";r=2;/);
    expect((await getJson(api, '/v1/learning-opportunities?limit=1', key)).headers.get('ratelimit')).to.match(
      /^"default";r=1;/,
    );
    expectProblem(await getJson(api, '/v1/learning-opportunities?limit=0', key), 400);

    for (const p of [path, '/v1/learning-opportunities']) {
      const refused = await getJson(api, p, key);
      const problem = expectProblem(refused, 429);
      expect(problem.type).to.equal('/problems/rate-limited');
      expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
      expect(refused.headers.get('ratelimit')).to.match(/^"default";r=0;t=\d+$/);
      expect(refused.headers.get('ratelimit-policy')).to.equal('"default";q=4;w=60');
    }
    // Another key has its own window.
    expect((await getJson(api, path, await createTestKey(['catalog:read']))).status).to.equal(200);
  });

  it('counts the feed in the same budget as the records, a long poll once, and refuses it with 429 over the limit', async () => {
    const key = await createTestKey(['catalog:read']);
    await feedSettled(testDb().pool); // a head behind this file's events would answer the long poll at once
    const head = await getJson(api, '/v1/events/head', key);
    expect(head.headers.get('ratelimit-policy')).to.equal('"default";q=4;w=60');
    expect(head.headers.get('ratelimit')).to.match(/^"default";r=3;/);
    // A long poll that reads at least twice (a wake-up with nothing new, then the commit) counts once.
    const polling = getJson(api, `/v1/events?after=${(head.body as { cursor: string }).cursor}&wait=20`, key);
    await until(() => api.feed.waiters.waiting() === 1);
    api.feed.waiters.wake();
    await createRecord(api.writes);
    const polled = await polling;
    expect((polled.body as { results: unknown[] }).results).to.have.length.above(0);
    expect(polled.headers.get('ratelimit')).to.match(/^"default";r=2;/);
    expect((await getJson(api, path, key)).headers.get('ratelimit')).to.match(/^"default";r=1;/);
    expect((await getJson(api, '/v1/events?limit=1', key)).headers.get('ratelimit')).to.match(/^"default";r=0;/);

    for (const p of ['/v1/events', '/v1/events/head', '/v1/events?limit=0', path]) {
      const refused = await getJson(api, p, key);
      expect(expectProblem(refused, 429).type).to.equal('/problems/rate-limited');
      expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
      expect(refused.headers.get('ratelimit')).to.match(/^"default";r=0;t=\d+$/);
    }
    expectProblem(await getJson(api, '/v1/events', null), 401); // the key before the limit
  });

  it("uses the key's own limit over RATE_LIMIT_PER_MINUTE", async () => {
    const key = await createTestKey(['catalog:read'], testDb(), 2);
    expect((await getJson(api, path, key)).headers.get('ratelimit-policy')).to.equal('"default";q=2;w=60');
    expect((await getJson(api, path, key)).status).to.equal(200);
    expectProblem(await getJson(api, path, key), 429);
  });

  it('checks the key before the limit: a revoked key over its limit gets 401', async () => {
    const created = await createApiKey(testDb().orm.em.fork(), {
      name: 'limited',
      scopes: ['catalog:read'],
      rateLimit: 1,
    });
    expect((await getJson(api, path, created.key)).status).to.equal(200);
    expectProblem(await getJson(api, path, created.key), 429);
    await revokeApiKey(testDb().orm.em.fork(), created.id);
    // 429 until the revocation reaches the key cache (milliseconds; half a second on a loaded
    // machine), then 401: within half the cache's 10 s age bound, so only the notification can do it.
    const started = performance.now();
    let status = 429;
    while (status === 429 && performance.now() - started < 5000)
      status = (await getJson(api, path, created.key)).status;
    expect(status).to.equal(401);
    expectProblem(await getJson(api, path, null), 401);
  });

  it('sends no rate-limit headers when limits are off (RATE_LIMIT_PER_MINUTE=0)', async () => {
    const off = await startTestApi({ rateLimit: { perMinute: 0, syncMs: 1000 } });
    try {
      const key = await createTestKey(['catalog:read'], testDb(), 1);
      for (let i = 0; i < 3; i++) {
        const res = await getJson(off, path, key);
        expect(res.status).to.equal(200);
        expect(res.headers.get('ratelimit')).to.equal(null);
        expect(res.headers.get('ratelimit-policy')).to.equal(null);
      }
    } finally {
      await off.close();
    }
  });

  describe('shared by two API processes', function () {
    this.timeout(60_000);
    const processes: RoleProcess[] = [];
    before(async () => {
      const env = { RATE_LIMIT_PER_MINUTE: '6000', RATE_LIMIT_SYNC_MS: '50' };
      processes.push(await startRoleProcess('api', env), await startRoleProcess('api', env));
    });
    after(async () => {
      for (const p of processes) expect(await p.stop()).to.equal(0);
    });

    it('admits about the limit in total (within 10%), not the limit per process, when requests are spread over both', async () => {
      // What a process does not know of yet is what the other admitted since its last sync (50 ms
      // here): some tens of requests at this pace, whatever the limit. A limit of 1,000 keeps that
      // well inside 10% even when a loaded machine delays the syncs (at 200, 228 was seen in CI).
      const limit = 1000;
      const key = await createTestKey(['catalog:read'], testDb(), limit);
      let admitted = 0;
      for (let i = 0; i < 2 * limit; i++) {
        const res = await fetch(`${processes[i % 2]!.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
        await res.arrayBuffer();
        if (res.status === 200) admitted++;
        else expect(res.status).to.equal(429);
      }
      expect(admitted).to.be.within(limit, limit * 1.1);
    });
  });
});
