// While the database is unreachable the API answers 503 with Retry-After (problem+json) and stays
// up; once the database is back it serves again without a restart. A TCP proxy in front of the
// test database plays the network.
import { expect } from 'chai';
import { connectDatabase, type Database } from '../../src/app/database.ts';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson, graphql, startTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';

describe('REST while the database is unreachable', () => {
  let proxy: TcpProxy;
  let db: Database;
  let api: Api;
  let key: string;
  let one: string;

  before(async () => {
    const target = new URL(testDb().url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const viaProxy = new URL(target);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    // A 1 s statement timeout: the client-side one (for a server that stopped answering) follows 1 s later.
    db = await connectDatabase(viaProxy.toString(), {
      poolMax: 2,
      connectTimeoutMs: 500,
      statementTimeoutMs: 1000,
      migrate: false,
    });
    api = await startTestApi({ db });
    key = await createTestKey(['catalog:read', 'graphql:read']);
    // Written on the test database directly: a write on a busy shared server may outlast the 1 s.
    const direct = await startTestApi();
    try {
      one = `/v1/learning-opportunities/${(await createRecord(direct.writes)).id}`;
    } finally {
      await direct.close();
    }
  });
  after(async () => {
    proxy.thaw();
    proxy.restore();
    await api?.close();
    await db?.close();
    await proxy?.close();
  });

  it('serves normally through the proxy', async () => {
    expect((await getJson(api, one, key)).status).to.equal(200);
  });

  it('answers 503 problem+json with Retry-After while cut, then recovers by itself', async function () {
    this.timeout(15_000);
    proxy.cut();
    for (const path of [one, '/v1/learning-opportunities', '/v1/learning-opportunities?limit=5']) {
      const started = Date.now();
      const res = await getJson(api, path, key);
      const problem = expectProblem(res, 503);
      expect(problem.type).to.equal('/problems/service-unavailable');
      expect(Number(res.headers.get('retry-after'))).to.be.greaterThan(0);
      // fails fast (connect timeout 500 ms), it does not hang until the client gives up
      expect(Date.now() - started).to.be.below(5_000);
    }
    // GraphQL readers get a clear UNAVAILABLE answer too, not a 500.
    const gql = await fetch(`${api.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query: '{ learningOpportunities(limit: 1) { pagination { totalCount } } }' }),
    });
    expect(gql.status).to.equal(503);
    expect(Number(gql.headers.get('retry-after'))).to.be.greaterThan(0);
    const gqlBody = (await gql.json()) as { errors: { extensions: { code: string } }[] };
    expect(gqlBody.errors[0]!.extensions.code).to.equal('SERVICE_UNAVAILABLE');

    proxy.restore();
    let status = 0;
    for (let attempt = 0; attempt < 20 && status !== 200; attempt++) {
      status = (await getJson(api, one, key)).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status, 'serves again after the database is back').to.equal(200);
    expect((await getJson(api, '/v1/learning-opportunities?limit=5', key)).status).to.equal(200);
    expect(
      (await graphql(api, key, '{ learningOpportunities(limit: 1) { pagination { totalCount } } }')).status,
    ).to.equal(200);
  });

  it('survives a cut in the middle of idle pooled connections', async function () {
    this.timeout(15_000);
    // Fill the pool with idle connections, then cut them all at once.
    await Promise.all([getJson(api, one, key), getJson(api, one, key)]);
    proxy.cut();
    await new Promise((r) => setTimeout(r, 50));
    expectProblem(await getJson(api, one, key), 503);
    proxy.restore();
    let status = 0;
    for (let attempt = 0; attempt < 20 && status !== 200; attempt++) {
      status = (await getJson(api, one, key)).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).to.equal(200);
  });

  it('answers 503 when the database stops answering on connections already open, instead of hanging', async function () {
    this.timeout(15_000);
    // Both pooled connections open and idle, then no byte flows either way (a frozen server).
    await Promise.all([getJson(api, one, key), getJson(api, '/v1/learning-opportunities?limit=3', key)]);
    proxy.freeze();
    try {
      const answers = await Promise.all(
        [one, '/v1/learning-opportunities?limit=4', '/v1/learning-opportunities?limit=6&offset=1'].map(async (path) => {
          const started = Date.now();
          const res = await getJson(api, path, key);
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
      proxy.thaw();
    }
    let status = 0;
    for (let attempt = 0; attempt < 30 && status !== 200; attempt++) {
      status = (await getJson(api, one, key)).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status, 'serves again once the database answers').to.equal(200);
  });
});
