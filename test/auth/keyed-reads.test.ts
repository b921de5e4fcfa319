// /v1 checks the API key in the same statement as the read (one round trip per request). These
// tests hold it to the rules of a separate look-up: the key is judged before the input, and a
// revocation is seen by the very next request, also while other requests keep the pool busy.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createApiKey, revokeApiKey } from '../../src/auth/api-keys.ts';
import type { Api } from '../../src/service.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson, startTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';

describe('REST key checks folded into the read statement', () => {
  let api: Api;
  let reader: string;
  let recordPath: string;
  const badInputs = ['/v1/learning-opportunities?limit=0', '/v1/learning-opportunities?offset=-1', '/v1/learning-opportunities/not-a-uuid'];

  before(async () => {
    api = await startTestApi();
    reader = await createTestKey(['catalog:read']);
    recordPath = `/v1/learning-opportunities/${(await createRecord(api.writes)).id}`;
  });
  after(() => api.close());

  it('answers 403, never 400 or 404, to a live key without catalog:read', async () => {
    const other = await createTestKey(['graphql:read']);
    for (const path of [...badInputs, `/v1/learning-opportunities/${randomUUID()}`, recordPath, '/v1/learning-opportunities']) {
      expect(expectProblem(await getJson(api, path, other), 403).type, path).to.equal('/problems/forbidden');
    }
  });

  it('answers 401, never 400 or 404, to a revoked key', async () => {
    const created = await createApiKey(testDb().orm.em.fork(), { name: 'revoked before use', scopes: ['catalog:read'] });
    await revokeApiKey(testDb().orm.em.fork(), created.id);
    for (const path of [...badInputs, `/v1/learning-opportunities/${randomUUID()}`, recordPath]) {
      expect(expectProblem(await getJson(api, path, created.key), 401).type, path).to.equal('/problems/unauthenticated');
    }
  });

  it('shows 400 and 404 to a key holding catalog:read', async () => {
    for (const path of badInputs) expectProblem(await getJson(api, path, reader), 400);
    expectProblem(await getJson(api, `/v1/learning-opportunities/${randomUUID()}`, reader), 404);
    expect((await getJson(api, recordPath, reader)).status).to.equal(200);
  });

  it('refuses a key on the first request that starts after its revocation, under concurrent load', async () => {
    const created = await createApiKey(testDb().orm.em.fork(), { name: 'revoked under load', scopes: ['catalog:read'] });
    let revokedAt = Infinity;
    const wrong: string[] = [];
    // Eight clients hammer both endpoints; each request records when it started and what it got.
    const client = async () => {
      for (let i = 0; i < 40; i++) {
        const path = i % 2 ? recordPath : '/v1/learning-opportunities?limit=5';
        const started = performance.now();
        const { status } = await getJson(api, path, created.key);
        if (started > revokedAt && status !== 401) wrong.push(`${path} started after the revocation and got ${status}`);
        if (started < revokedAt && status !== 200 && status !== 401) wrong.push(`${path} got ${status}`);
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, client));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await revokeApiKey(testDb().orm.em.fork(), created.id);
    revokedAt = performance.now();
    await load;
    expect(wrong).to.deep.equal([]);
    expectProblem(await getJson(api, recordPath, created.key), 401);
  });
});
