// A NUL (%00) anywhere in a /v1 query parameter is a 400 problem naming the parameter, like a value
// that is not valid percent-encoding (kernel/query-string.ts): no stored text can hold a NUL, and
// `q=a%00b` searched for "a b" and answered 200.
import { expect } from 'chai';
import { getJson, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectInvalidParams } from '../support/problem.ts';

describe('NUL in /v1 query parameters', () => {
  const served = useTestApi(['catalog:read']);
  before(async () => {
    await createRecord(served.api.writes);
  });

  it('answers a parameter holding a NUL with a 400 naming it, not a search', async () => {
    for (const [query, names] of [
      ['q=a%00b', ['q']],
      ['q=%00', ['q']],
      ['city=Ber%00lin', ['city']],
      ['q=ab&city=Ber%00lin&sort=%00relevance', ['city', 'sort']],
      ['limit=1%00', ['limit']],
      ['unknown=%00', ['unknown']],
      ['q%00=ab', ['q%00']],
    ] as const) {
      const res = await getJson(served.api, `/v1/learning-opportunities?${query}`, served.key);
      const problem = expectInvalidParams(res, [...names]);
      expect(problem.type, query).to.equal('/problems/invalid-parameters');
      for (const p of problem.invalidParams!) expect(p.reason, query).to.include('NUL');
    }
    expectInvalidParams(await getJson(served.api, '/v1/events?limit=%00', served.key), ['limit']);
  });

  it('names a NUL and a bad escape together, each with its reason', async () => {
    const res = await getJson(served.api, '/v1/learning-opportunities?q=a%00b&city=%zz', served.key);
    const problem = expectInvalidParams(res, ['q', 'city']);
    const reasons = Object.fromEntries(problem.invalidParams!.map((p) => [p.name, p.reason]));
    expect(reasons.q).to.include('NUL');
    expect(reasons.city).to.include('percent-encoding');
  });

  it('still answers parameters without a NUL', async () => {
    for (const query of ['q=ab', 'city=Berlin', 'q=a%20b', 'provider=100%25%20Online'])
      expect((await getJson(served.api, `/v1/learning-opportunities?${query}`, served.key)).status, query).to.equal(
        200,
      );
    // The key is checked first: without one it is a 401, as for any other bad parameter.
    expect((await getJson(served.api, '/v1/learning-opportunities?q=a%00b', null)).status).to.equal(401);
  });
});
