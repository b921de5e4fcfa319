// While the database is unreachable the API answers 503 with Retry-After (problem+json) and stays
// up; once the database is back it serves again without a restart. A TCP proxy in front of the
// test database plays the network.
import { expect } from 'chai';
import { createTestKey, getJson, graphql, startTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';
import { type ProxiedApi, startProxiedApi } from '../support/proxied-api.ts';

describe('REST while the database is unreachable', () => {
  let proxied: ProxiedApi;
  let key: string;
  let one: string;

  before(async () => {
    // A 1 s statement timeout: the client-side one (for a server that stopped answering) follows 1 s later.
    proxied = await startProxiedApi({ connect: { poolMax: 2, connectTimeoutMs: 500, statementTimeoutMs: 1000 } });
    key = await createTestKey(['catalog:read', 'graphql:read']);
    // Written on the test database directly: a write on a busy shared server may outlast the 1 s.
    const direct = await startTestApi();
    try {
      one = `/v1/learning-opportunities/${(await createRecord(direct.writes)).id}`;
    } finally {
      await direct.close();
    }
  });
  after(() => proxied?.close());

  it('serves normally through the proxy', async () => {
    expect((await getJson(proxied.api, one, key)).status).to.equal(200);
  });

  it('answers 503 problem+json with Retry-After while cut, then recovers by itself', async function () {
    this.timeout(15_000);
    proxied.proxy.cut();
    for (const path of [one, '/v1/learning-opportunities', '/v1/learning-opportunities?limit=5']) {
      const started = Date.now();
      const res = await getJson(proxied.api, path, key);
      const problem = expectProblem(res, 503);
      expect(problem.type).to.equal('/problems/service-unavailable');
      expect(Number(res.headers.get('retry-after'))).to.be.greaterThan(0);
      // fails fast (connect timeout 500 ms), it does not hang until the client gives up
      expect(Date.now() - started).to.be.below(5_000);
    }
    // GraphQL readers get a clear UNAVAILABLE answer too, not a 500.
    const gql = await fetch(`${proxied.api.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query: '{ learningOpportunities(limit: 1) { pagination { totalCount } } }' }),
    });
    expect(gql.status).to.equal(503);
    expect(Number(gql.headers.get('retry-after'))).to.be.greaterThan(0);
    const gqlBody = (await gql.json()) as { errors: { extensions: { code: string } }[] };
    expect(gqlBody.errors[0]!.extensions.code).to.equal('SERVICE_UNAVAILABLE');

    proxied.proxy.restore();
    let status = 0;
    for (let attempt = 0; attempt < 20 && status !== 200; attempt++) {
      status = (await getJson(proxied.api, one, key)).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status, 'serves again after the database is back').to.equal(200);
    expect((await getJson(proxied.api, '/v1/learning-opportunities?limit=5', key)).status).to.equal(200);
    expect(
      (await graphql(proxied.api, key, '{ learningOpportunities(limit: 1) { pagination { totalCount } } }')).status,
    ).to.equal(200);
  });

  it('survives a cut in the middle of idle pooled connections', async function () {
    this.timeout(15_000);
    // Fill the pool with idle connections, then cut them all at once.
    await Promise.all([getJson(proxied.api, one, key), getJson(proxied.api, one, key)]);
    proxied.proxy.cut();
    await new Promise((r) => setTimeout(r, 50));
    expectProblem(await getJson(proxied.api, one, key), 503);
    proxied.proxy.restore();
    let status = 0;
    for (let attempt = 0; attempt < 20 && status !== 200; attempt++) {
      status = (await getJson(proxied.api, one, key)).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).to.equal(200);
  });

  it('answers 503 when the database stops answering on connections already open, instead of hanging', async function () {
    this.timeout(15_000);
    // Both pooled connections open and idle, then no byte flows either way (a frozen server).
    await Promise.all([
      getJson(proxied.api, one, key),
      getJson(proxied.api, '/v1/learning-opportunities?limit=3', key),
    ]);
    proxied.proxy.freeze();
    try {
      const answers = await Promise.all(
        [one, '/v1/learning-opportunities?limit=4', '/v1/learning-opportunities?limit=6&offset=1'].map(async (path) => {
          const started = Date.now();
          const res = await getJson(proxied.api, path, key);
          return { status: res.status, retryAfter: res.headers.get('retry-after'), ms: Date.now() - started };
        }),
      );
      for (const a of answers) {
        expect(a, 'a 503 with Retry-After, within the timeouts (2 s per statement, 0.5 s per connect)').to.include({
          status: 503,
        });
        expect(Number(a.retryAfter)).to.be.greaterThan(0);
        expect(a.ms).to.be.below(5_000);
      }
    } finally {
      proxied.proxy.thaw();
    }
    let status = 0;
    for (let attempt = 0; attempt < 30 && status !== 200; attempt++) {
      status = (await getJson(proxied.api, one, key)).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status, 'serves again once the database answers').to.equal(200);
  });
});
