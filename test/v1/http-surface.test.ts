// The HTTP surface around /v1: HEAD mirrors GET, other methods are 405 with Allow, unknown paths
// are 404, and every non-2xx answer is problem+json without internals.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { getJson, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectInvalidParams, expectProblem } from '../support/problem.ts';

describe('HTTP surface of /v1', () => {
  const served = useTestApi(['catalog:read']);
  let id: string;

  before(async () => {
    id = (await createRecord(served.api.writes)).id;
  });

  for (const path of [
    '/v1/learning-opportunities',
    '/v1/learning-opportunities?limit=2',
    '/v1/learning-opportunities/:id',
  ]) {
    it(`HEAD ${path} is 200 with GET's headers and no body`, async () => {
      const url = path.replace(':id', id);
      const get = await getJson(served.api, url, served.key);
      const head = await getJson(served.api, url, served.key, { method: 'HEAD' });
      expect(head.status).to.equal(200);
      expect(head.text).to.equal('');
      for (const name of ['content-type', 'content-length'])
        expect(head.headers.get(name), name).to.equal(get.headers.get(name));
      expect(Number(get.headers.get('content-length'))).to.equal(Buffer.byteLength(get.text));
    });
  }

  it('HEAD answers errors with the status of GET (401, 400, 404)', async () => {
    expect((await getJson(served.api, '/v1/learning-opportunities', null, { method: 'HEAD' })).status).to.equal(401);
    expect(
      (await getJson(served.api, '/v1/learning-opportunities?limit=0', served.key, { method: 'HEAD' })).status,
    ).to.equal(400);
    expect(
      (await getJson(served.api, `/v1/learning-opportunities/${randomUUID()}`, served.key, { method: 'HEAD' })).status,
    ).to.equal(404);
  });

  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
    for (const path of ['/v1/learning-opportunities', '/v1/learning-opportunities/:id']) {
      it(`${method} ${path} is 405 with Allow: GET, HEAD and changes nothing`, async () => {
        const url = path.replace(':id', id);
        const res = await getJson(served.api, url, served.key, {
          method,
          headers: { 'content-type': 'application/json' },
          body: method === 'OPTIONS' ? undefined : '{}',
        });
        const problem = expectProblem(res, 405);
        expect(res.headers.get('allow')).to.equal('GET, HEAD');
        expect(problem.type).to.equal('/problems/method-not-allowed');
        expect(problem.instance).to.equal(url);
        expect((await getJson(served.api, `/v1/learning-opportunities/${id}`, served.key)).status).to.equal(200);
      });
    }
  }

  for (const path of [
    '/',
    '/v1',
    '/v1/',
    '/v2/learning-opportunities',
    '/v1/learning-opportunity',
    '/v1/learning-opportunities/:id/sessions',
    '/v1/learning-opportunities/:id/x/y',
  ]) {
    it(`GET ${path} is 404 problem+json`, async () => {
      const url = path.replace(':id', id);
      const problem = expectProblem(await getJson(served.api, url, served.key), 404);
      expect(problem.type).to.equal('/problems/not-found');
      expect(problem.instance).to.equal(url);
    });
  }

  it('PUT /graphql is 405 with Allow: POST', async () => {
    const res = await getJson(served.api, '/graphql', served.key, { method: 'PUT', body: '{}' });
    expectProblem(res, 405);
    expect(res.headers.get('allow')).to.equal('POST');
  });

  it('POST to an unknown path is 404, not 405', async () => {
    expectProblem(await getJson(served.api, '/v1/nothing-here', served.key, { method: 'POST', body: '{}' }), 404);
  });

  it('answers a path that is not valid percent-encoding with a 400 problem, not a crash', async () => {
    const res = await getJson(served.api, '/v1/learning-opportunities/%E0%A4%A', served.key);
    expectInvalidParams(res, ['path']);
    expect((await getJson(served.api, `/v1/learning-opportunities/${id}`, served.key)).status).to.equal(200);
  });

  it('answers a query string that is not valid percent-encoding with a 400 naming the parameter, not an empty list', async () => {
    // querystring kept "%zz" as it is and made bytes that are not UTF-8 into U+FFFD: a 200 with no results.
    for (const [query, names] of [
      ['city=%zz', ['city']],
      ['city=Berlin&q=%E0%A4%A', ['q']],
      ['language=%ff', ['language']],
      ['ci%zzty=Berlin&topic=%', ['ci%zzty', 'topic']],
      // A name that is not UTF-8 is named as sent (it was U+FFFD).
      ['%ff=1&c%C3%28=2', ['%ff', 'c%C3%28']],
    ] as const) {
      const res = await getJson(served.api, `/v1/learning-opportunities?${query}`, served.key);
      expect(expectInvalidParams(res, [...names]).detail, query).to.include('percent-encoding');
    }
    expectInvalidParams(await getJson(served.api, '/v1/events?limit=%zz', served.key), ['limit']);
    // Valid escapes of UTF-8 text, "+" for a space and a literal "%25" still work.
    for (const query of ['city=K%C3%B6ln', 'q=machine+learning', 'provider=100%25%20Online'])
      expect((await getJson(served.api, `/v1/learning-opportunities?${query}`, served.key)).status, query).to.equal(
        200,
      );
    // The key is checked first: without one it is a 401, as for any other bad parameter.
    expect((await getJson(served.api, '/v1/learning-opportunities?city=%zz', null)).status).to.equal(401);
  });

  it('links problem types to a description', async () => {
    const problem = expectProblem(await getJson(served.api, '/v1/learning-opportunities?limit=0', served.key), 400);
    const doc = await getJson(served.api, problem.type, null);
    expect(doc.status).to.equal(200);
    expect(doc.body).to.include({ status: 400, title: problem.title });
  });
});
