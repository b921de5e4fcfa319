// /v1 judges the API key before the input, from the process's key cache (one round trip per request:
// the read). These tests hold it to the rules of a look-up per request: a revoked key never gets a
// 400 or 404, and a revocation is seen within milliseconds also while other requests keep the pool
// busy, and never undone afterwards.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createApiKey, revokeApiKey } from '../../src/auth/api-keys.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';

describe('REST key checks before the input, from the key cache', () => {
  const served = useTestApi({ reader: ['catalog:read'] });
  let recordPath: string;
  const badInputs = [
    '/v1/learning-opportunities?limit=0',
    '/v1/learning-opportunities?offset=-1',
    '/v1/learning-opportunities/not-a-uuid',
  ];

  before(async () => {
    recordPath = `/v1/learning-opportunities/${(await createRecord(served.api.writes)).id}`;
  });

  it('answers 403, never 400 or 404, to a live key without catalog:read', async () => {
    const other = await createTestKey(['graphql:read']);
    for (const path of [
      ...badInputs,
      `/v1/learning-opportunities/${randomUUID()}`,
      recordPath,
      '/v1/learning-opportunities',
    ]) {
      expect(expectProblem(await getJson(served.api, path, other), 403).type, path).to.equal('/problems/forbidden');
    }
  });

  it('answers 401, never 400 or 404, to a revoked key', async () => {
    const created = await createApiKey(testDb().orm.em.fork(), {
      name: 'revoked before use',
      scopes: ['catalog:read'],
    });
    await revokeApiKey(testDb().orm.em.fork(), created.id);
    for (const path of [...badInputs, `/v1/learning-opportunities/${randomUUID()}`, recordPath]) {
      expect(expectProblem(await getJson(served.api, path, created.key), 401).type, path).to.equal(
        '/problems/unauthenticated',
      );
    }
  });

  it('shows 400 and 404 to a key holding catalog:read', async () => {
    for (const path of badInputs) expectProblem(await getJson(served.api, path, served.reader), 400);
    expectProblem(await getJson(served.api, `/v1/learning-opportunities/${randomUUID()}`, served.reader), 404);
    expect((await getJson(served.api, recordPath, served.reader)).status).to.equal(200);
  });

  it('refuses a key from soon after its revocation on, under concurrent load, and never lets it back', async function () {
    this.timeout(90_000); // 480 requests: minutes on a loaded 2-core machine
    const created = await createApiKey(testDb().orm.em.fork(), {
      name: 'revoked under load',
      scopes: ['catalog:read'],
    });
    let revokedAt = Infinity;
    const answers: { started: number; status: number }[] = [];
    // Eight clients hammer both endpoints; each request records when it started and what it got.
    // A request under way while the revocation commits may get either answer.
    const client = async () => {
      for (let i = 0; i < 60; i++) {
        const started = performance.now();
        answers.push({
          started,
          status: (await getJson(served.api, i % 2 ? recordPath : '/v1/learning-opportunities?limit=5', created.key))
            .status,
        });
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, client));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await revokeApiKey(testDb().orm.em.fork(), created.id);
    revokedAt = performance.now();
    await load;
    expect(answers.filter((a) => a.status !== 200 && a.status !== 401)).to.deep.equal([]);
    const accepted = answers.filter((a) => a.status === 200);
    expect(accepted.length, 'the key worked before its revocation').to.be.above(0);
    expect(answers.filter((a) => a.started > revokedAt).length, 'requests started after the revocation').to.be.above(0);
    // The notification's trip, under load on a shared machine: half the cache's 10 s age bound at most.
    expect(Math.max(...accepted.map((a) => a.started)) - revokedAt).to.be.below(5000);
    for (let i = 0; i < 20; i++)
      expectProblem(await getJson(served.api, i % 2 ? recordPath : '/v1/learning-opportunities', created.key), 401);
  });
});
