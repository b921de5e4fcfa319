// A frozen database (connections open, no byte flows): with the statement timeout at its default
// (30 s, the client giving up 5 s later), a read still fails within seconds, since the API's reads
// carry their own client-side timeout (DB_READ_TIMEOUT_MS); and GraphQL answers the outage one way,
// HTTP 503 with Retry-After and SERVICE_UNAVAILABLE, whether the key was cached (the resolver meets
// the outage) or not (the gate's key look-up does). A TCP proxy in front of the test database plays
// the frozen server.
import { expect } from 'chai';
import { loadConfig } from '../../src/kernel/config.ts';
import type { Api } from '../../src/app/service.ts';
import { createTestKey, getJson, startTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';
import { type ProxiedApi, startProxiedApi } from '../support/proxied-api.ts';

const READ_TIMEOUT_MS = 1000;
const QUERY = '{ learningOpportunities(limit: 2) { results { id } pagination { totalCount } } }';

async function postGraphql(
  api: Api,
  key: string,
  query: string,
): Promise<{ status: number; retryAfter: string | null; body: unknown; ms: number }> {
  const started = Date.now();
  const res = await fetch(`${api.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query }),
  });
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    body: await res.json(),
    ms: Date.now() - started,
  };
}

describe('reads while the database is frozen', function () {
  this.timeout(30_000);
  let proxied: ProxiedApi;
  let one: string;

  before(async () => {
    // The service's default statement timeout: alone, it would let a read hang 35 s.
    proxied = await startProxiedApi({
      connect: { poolMax: 3, connectTimeoutMs: 500, statementTimeoutMs: loadConfig({}).db.statementTimeoutMs },
      api: { readTimeoutMs: READ_TIMEOUT_MS },
    });
    const direct = await startTestApi();
    try {
      one = `/v1/learning-opportunities/${(await createRecord(direct.writes)).id}`;
    } finally {
      await direct.close();
    }
  });
  after(() => proxied?.close());

  it('reads default to a 5 s client-side timeout', () => {
    expect(loadConfig({}).db.readTimeoutMs).to.equal(5000);
    expect(loadConfig({ DB_READ_TIMEOUT_MS: '1500' }).db.readTimeoutMs).to.equal(1500);
  });

  it('a REST read and GraphQL (cached key or not) fail within seconds: 503, Retry-After, SERVICE_UNAVAILABLE, the same every time; then recover', async () => {
    const cached = await createTestKey(['catalog:read', 'graphql:read']);
    const uncached = await createTestKey(['catalog:read', 'graphql:read']);
    // Idle pooled connections and a cached key, then the server freezes. On a loaded machine a new
    // connection can take longer than the 500 ms connect timeout (a 503): warm until all answer.
    const warmUp = () =>
      Promise.all([
        getJson(proxied.api, one, cached),
        getJson(proxied.api, '/v1/learning-opportunities?limit=2', cached),
        getJson(proxied.api, '/v1/events?limit=2', cached),
        postGraphql(proxied.api, cached, QUERY),
      ]);
    let warm = await warmUp();
    for (let attempt = 0; attempt < 20 && warm.some((r) => r.status !== 200); attempt++) warm = await warmUp();
    expect(warm.map((r) => r.status)).to.deep.equal([200, 200, 200, 200]);
    proxied.proxy.freeze();
    try {
      const rest = async (path: string) => {
        const started = Date.now();
        const res = await getJson(proxied.api, path, cached);
        return { res, ms: Date.now() - started };
      };
      const [restOne, restList, restFeed, gqlCached, gqlUncached, gqlTwoFields] = await Promise.all([
        rest(one),
        rest('/v1/learning-opportunities?limit=3'),
        rest('/v1/events?limit=3'),
        postGraphql(proxied.api, cached, QUERY),
        postGraphql(proxied.api, uncached, QUERY),
        postGraphql(
          proxied.api,
          cached,
          `{ a: learningOpportunities(limit: 1) { results { id } } b: learningOpportunity(id: "${one.split('/').pop()}") { id } }`,
        ),
      ]);
      for (const { res, ms } of [restOne!, restList!, restFeed!]) {
        expect(expectProblem(res, 503).type).to.equal('/problems/service-unavailable');
        expect(Number(res.headers.get('retry-after'))).to.be.greaterThan(0);
        expect(ms, 'a read fails within seconds, not after the statement timeout').to.be.below(10_000);
      }
      const unavailable = {
        errors: [
          { message: 'The database is unreachable; try again shortly', extensions: { code: 'SERVICE_UNAVAILABLE' } },
        ],
      };
      for (const [name, answer] of Object.entries({ gqlCached, gqlUncached, gqlTwoFields })) {
        expect({ name, status: answer.status, body: answer.body }).to.deep.equal({
          name,
          status: 503,
          body: unavailable,
        });
        expect(Number(answer.retryAfter), name).to.be.greaterThan(0);
        expect(answer.ms, name).to.be.below(10_000);
      }
    } finally {
      proxied.proxy.thaw();
    }
    let status = 0;
    for (let attempt = 0; attempt < 50 && status !== 200; attempt++) {
      status = (await postGraphql(proxied.api, cached, QUERY)).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status, 'serves again once the database answers').to.equal(200);
    expect((await getJson(proxied.api, one, uncached)).status).to.equal(200);
  });
});
