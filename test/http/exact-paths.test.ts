// Paths match exactly: a case variant or a trailing slash of a known path is an unknown path (404
// problem), so nothing reaches /metrics, /graphql or /v1 past a proxy rule written for the exact path.
import { expect } from 'chai';
import { getJson, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';

describe('exact paths', () => {
  const served = useTestApi();
  let id: string;

  before(async () => {
    id = (await createRecord(served.api.writes, { status: 'PUBLISHED' })).id;
  });

  const graphqlBody = {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ learningOpportunities(limit: 1) { pagination { totalCount } } }' }),
  };

  it('serves the exact paths', async () => {
    for (const path of [
      '/metrics',
      '/healthz',
      '/v1/openapi.json',
      '/v1/learning-opportunities',
      `/v1/learning-opportunities/${id}`,
    ]) {
      expect((await getJson(served.api, path, served.key)).status, path).to.equal(200);
    }
    // Not ready in the suite (no job queue schema): 503, but the route answered.
    expect((await getJson(served.api, '/readyz', served.key)).status).to.be.oneOf([200, 503]);
    expect((await getJson(served.api, '/graphql', served.key, graphqlBody)).status).to.equal(200);
  });

  it('answers other methods on a problem type page with 405 and Allow: GET, HEAD, like every known path; an unknown type stays 404', async () => {
    for (const method of ['POST', 'DELETE']) {
      const answer = await getJson(served.api, '/problems/not-found', null, { method });
      expectProblem(answer, 405);
      expect(answer.headers.get('allow'), method).to.equal('GET, HEAD');
      expectProblem(await getJson(served.api, '/problems/no-such-type', null, { method }), 404);
    }
    expect((await getJson(served.api, '/problems/not-found', null, { method: 'HEAD' })).status).to.equal(200);
  });

  const variants = [
    '/METRICS',
    '/Metrics',
    '/metrics/',
    '/HEALTHZ',
    '/healthz/',
    '/Readyz',
    '/readyz/',
    '/V1/learning-opportunities',
    '/v1/Learning-Opportunities',
    '/v1/learning-opportunities/',
    '/v1/learning-opportunities/:id/',
    '/V1/learning-opportunities/:id',
    '/v1/OPENAPI.json',
    '/v1/openapi.json/',
    '/Problems/not-found',
    '/problems/not-found/',
    '/DOCS',
    '/docs/',
    '/v1/Events',
    '/v1/events/',
    '/v1/events/head/',
  ];
  for (const variant of variants) {
    it(`GET ${variant} is a 404 problem`, async () => {
      const path = variant.replace(':id', id);
      const problem = expectProblem(await getJson(served.api, path, served.key), 404);
      expect(problem.type).to.equal('/problems/not-found');
    });
  }

  for (const path of ['/GraphQL', '/GRAPHQL', '/graphql/']) {
    it(`POST ${path} is a 404 problem`, async () => {
      expectProblem(await getJson(served.api, path, served.key, graphqlBody), 404);
    });
  }
});
