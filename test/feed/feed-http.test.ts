// GET /v1/events and /v1/events/head over real HTTP: shapes, paging, the stored webhook bytes, and
// every error answered as the other /v1 routes answer them.
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { encodeCursor } from '../../src/feed/cursor.ts';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson } from '../support/api.ts';
import { buildLearningOpportunityInput, createRecord } from '../support/factories.ts';
import { expectInvalidParams, expectProblem } from '../support/problem.ts';
import { collect, feed, follow, head, startFeedApi } from './feed-support.ts';

describe('GET /v1/events', () => {
  let api: Api;
  let key: string;
  before(async () => ({ api, key } = await startFeedApi()));
  after(() => api.close());

  it('serves every change after the head, deletions included, as the stored webhook bodies, in order', async () => {
    const start = await head(api, key);
    const record = await createRecord(api.writes);
    await api.writes.upsert(
      parseLearningOpportunityInput(buildLearningOpportunityInput({ id: record.id, title: 'Renamed' })),
    );
    await api.writes.archive(record.id);
    await api.writes.delete(record.id);

    await collect(api, key, start, 4);
    const page = await feed(api, key, { after: start });
    expect(page.results.map((e) => [e.type, e.resource.id])).to.deep.equal([
      ['LEARNING_OPPORTUNITY_PUBLISHED', record.id],
      ['LEARNING_OPPORTUNITY_UPDATED', record.id],
      ['LEARNING_OPPORTUNITY_ARCHIVED', record.id],
      ['LEARNING_OPPORTUNITY_DELETED', record.id],
    ]);
    expect(page.results[1]!.data!.title).to.equal('Renamed');
    expect(page.results[3]!.data).to.equal(null);
    // Byte for byte the stored body that the webhook worker signs and sends.
    const { rows } = await testDb().pool.query<{ body: string }>(
      'select body from event where resource_id = $1 order by xid, position',
      [record.id],
    );
    expect(page.text).to.contain(`"results":[${rows.map((r) => r.body).join(',')}]`);
    expect(page.pagination).to.deep.include({ limit: 100, after: start, hasMore: false });

    // At the end, next stays where it is; an empty page keeps the cursor.
    const end = await feed(api, key, { after: page.pagination.next });
    expect(end.results).to.deep.equal([]);
    expect(end.pagination.next).to.equal(page.pagination.next);
    expect(await head(api, key)).to.equal(page.pagination.next);
  });

  it('pages with limit and hasMore; following next sees each event once', async () => {
    const start = await head(api, key);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createRecord(api.writes)).id);
    await collect(api, key, start, 5);
    const first = await feed(api, key, { after: start, limit: 2 });
    expect(first.results).to.have.length(2);
    expect(first.pagination.hasMore).to.equal(true);
    const rest = await follow(api, key, first.pagination.next, 2);
    expect([...first.results, ...rest.events].map((e) => e.resource.id)).to.deep.equal(ids);
    // Without `after`: from the oldest retained event (this suite's whole history).
    const fromStart = await feed(api, key, { limit: 1000 });
    expect(fromStart.pagination.after).to.equal(null);
    expect(fromStart.results.map((e) => e.resource.id)).to.include.members(ids);
  });

  it('HEAD works; other methods are 405 with Allow; paths match exactly', async () => {
    for (const path of ['/v1/Events', '/v1/events/', '/v1/events/HEAD', '/v1/events/head/'])
      expectProblem(await getJson(api, path, key), 404);
    expect((await getJson(api, '/v1/events', key, { method: 'HEAD' })).status).to.equal(200);
    expect((await getJson(api, '/v1/events/head', key, { method: 'HEAD' })).status).to.equal(200);
    for (const path of ['/v1/events', '/v1/events/head']) {
      const res = await getJson(api, path, key, { method: 'POST' });
      expectProblem(res, 405);
      expect(res.headers.get('allow')).to.equal('GET, HEAD');
    }
  });

  it('answers 400 naming the parameter, after 401/403', async () => {
    const bad: [string, string[]][] = [
      ['limit=0', ['limit']],
      ['limit=1001', ['limit']],
      ['limit=abc', ['limit']],
      ['limit=1.5', ['limit']],
      ['limit=1&limit=2', ['limit']],
      ['wait=31', ['wait']],
      ['wait=-1', ['wait']],
      ['after=', ['after']],
      ['after=not-a-cursor!', ['after']],
      [`after=${Buffer.from('v1.1.x').toString('base64url')}`, ['after']],
      [`after=${Buffer.from(`v1.${2n ** 64n}.1`).toString('base64url')}`, ['after']],
      ['after=a&after=b&wait=99', ['after', 'wait']],
      [`after=${encodeCursor({ xid: String(2n ** 62n), position: '1' })}`, ['after']], // no such transaction yet
    ];
    for (const [query, names] of bad) expectInvalidParams(await getJson(api, `/v1/events?${query}`, key), names);
    expectProblem(await getJson(api, '/v1/events?limit=0', null), 401);
    expectProblem(await getJson(api, '/v1/events?limit=0', `lods_${randomBytes(32).toString('base64url')}`), 401);
    const unscoped = await createTestKey(['graphql:read']);
    expectProblem(await getJson(api, '/v1/events?limit=0', unscoped), 403);
    expectProblem(await getJson(api, '/v1/events/head', unscoped), 403);
    expectProblem(await getJson(api, '/v1/events/head', null), 401);
  });
});
