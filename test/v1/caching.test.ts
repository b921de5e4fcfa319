// HTTP caching of the /v1 reads (docs/contract.md, "Caching"): strong ETags that change exactly when the bytes
// do, Cache-Control: private, no-cache, and 304 for a matching If-None-Match, after the key check.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createApiKey, revokeApiKey } from '../../src/auth/api-keys.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson, useTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput, createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';

const STRONG_TAG = /^"[0-9a-f]{32}"$/;

describe('HTTP caching of /v1', () => {
  const served = useTestApi(['catalog:read']);

  const get = (path: string, headers: Record<string, string> = {}, k: string | null = served.key, method = 'GET') =>
    getJson(served.api, path, k, { method, headers });

  it('GET one carries a strong ETag and Cache-Control, and answers a matching If-None-Match with 304 and no body', async () => {
    const path = `/v1/learning-opportunities/${(await createRecord(served.api.writes)).id}`;
    const first = await get(path);
    const etag = first.headers.get('etag')!;
    expect(etag).to.match(STRONG_TAG);
    expect(first.headers.get('cache-control')).to.equal('private, no-cache');
    for (const inm of [etag, `W/${etag}`, `"nope", ${etag}`, '*']) {
      const again = await get(path, { 'if-none-match': inm });
      expect(again.status, inm).to.equal(304);
      expect(again.text, inm).to.equal('');
      expect(again.headers.get('etag'), inm).to.equal(etag);
      expect(again.headers.get('cache-control'), inm).to.equal('private, no-cache');
    }
    const head = await get(path, { 'if-none-match': etag }, served.key, 'HEAD');
    expect(head.status).to.equal(304);
    const other = await get(path, { 'if-none-match': '"0123456789abcdef0123456789abcdef"' });
    expect(other.status).to.equal(200);
    expect(other.text).to.equal(first.text);
    expect(other.headers.get('etag')).to.equal(etag);
  });

  it("changes a record's ETag exactly when its bytes change", async () => {
    const input = buildLearningOpportunityInput();
    await served.api.writes.upsert(parseLearningOpportunityInput(input));
    await served.api.writes.publish(input.id);
    const path = `/v1/learning-opportunities/${input.id}`;
    const before = await get(path);
    await served.api.writes.upsert(parseLearningOpportunityInput(input)); // identical save: same bytes
    const same = await get(path, { 'if-none-match': before.headers.get('etag')! });
    expect(same.status).to.equal(304);
    await served.api.writes.upsert(parseLearningOpportunityInput({ ...input, title: 'A new title' }));
    const changed = await get(path, { 'if-none-match': before.headers.get('etag')! });
    expect(changed.status).to.equal(200);
    expect(changed.text).not.to.equal(before.text);
    expect(changed.headers.get('etag')).to.match(STRONG_TAG).and.not.equal(before.headers.get('etag'));
  });

  it('a list page carries an ETag that changes with any byte of the page or totalCount, and 304s when unchanged', async () => {
    const below = await createRecord(served.api.writes); // older: below the first page of two
    const onPage = await createRecord(served.api.writes);
    await createRecord(served.api.writes);
    const path = '/v1/learning-opportunities?limit=2';
    const first = await get(path);
    const etag = first.headers.get('etag')!;
    expect(etag).to.match(STRONG_TAG);
    expect(first.headers.get('cache-control')).to.equal('private, no-cache');
    const unchanged = await get(path, { 'if-none-match': etag });
    expect(unchanged.status).to.equal(304);
    expect(unchanged.text).to.equal('');
    expect(unchanged.headers.get('etag')).to.equal(etag);
    expect((await get('/v1/learning-opportunities?limit=3')).headers.get('etag'), 'another limit').not.to.equal(etag);
    expect(
      (await get('/v1/learning-opportunities?limit=2&offset=1')).headers.get('etag'),
      'another offset',
    ).not.to.equal(etag);

    // A record below the page leaves the list: the same records on the page, another totalCount.
    await served.api.writes.archive(below.id);
    const counted = await get(path, { 'if-none-match': etag });
    expect(counted.status, 'totalCount moved').to.equal(200);
    expect((counted.body as { results: unknown[] }).results).to.deep.equal(
      (first.body as { results: unknown[] }).results,
    );
    expect(counted.headers.get('etag')).not.to.equal(etag);

    await served.api.writes.archive(onPage.id);
    const moved = await get(path, { 'if-none-match': counted.headers.get('etag')! });
    expect(moved.status, 'a record left the page').to.equal(200);
  });

  it('checks the key before the condition: 401 and 403, never 304', async () => {
    const path = `/v1/learning-opportunities/${(await createRecord(served.api.writes)).id}`;
    const etag = (await get(path)).headers.get('etag')!;
    const unscoped = await createTestKey(['graphql:read']);
    const revoked = await createApiKey(testDb().orm.em.fork(), { name: 'revoked', scopes: ['catalog:read'] });
    await revokeApiKey(testDb().orm.em.fork(), revoked.id);
    for (const p of [path, '/v1/learning-opportunities']) {
      expectProblem(await get(p, { 'if-none-match': '*' }, null), 401);
      expectProblem(await get(p, { 'if-none-match': etag }, revoked.key), 401);
      expectProblem(await get(p, { 'if-none-match': '*' }, unscoped), 403);
    }
    expectProblem(await get(`/v1/learning-opportunities/${randomUUID()}`, { 'if-none-match': '*' }), 404);
  });
});
