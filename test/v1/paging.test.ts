// GET /v1/learning-opportunities paging: defaults, the pagination object, and every bad value
// rejected (never clamped) with a problem naming the parameter.
import { expect } from 'chai';
import { testDb } from '../hooks.ts';
import { getJson, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectInvalidParams } from '../support/problem.ts';

type ListBody = { results: { id: string }[]; pagination: { totalCount: number; limit: number; offset: number } };

async function publishedInDatabase(): Promise<number> {
  const { rows } = await testDb().pool.query<{ n: number }>(
    `select count(*)::int as n from learning_opportunity where status = 'PUBLISHED'`,
  );
  return rows[0]!.n;
}

describe('GET /v1/learning-opportunities paging', () => {
  const served = useTestApi(['catalog:read']);
  const list = (query: string) => getJson(served.api, `/v1/learning-opportunities${query}`, served.key);

  before(async function () {
    this.timeout(30_000);
    // More than one default page, plus a draft that must not count.
    for (let i = 0; i < 22; i++) await createRecord(served.api.writes, { title: `Paging ${i}` });
    await createRecord(served.api.writes, {}, { publish: false });
  });

  it('defaults to limit 20 and offset 0, and reports the true totalCount', async () => {
    const res = await list('');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    const body = res.body as ListBody;
    const total = await publishedInDatabase();
    expect(body.pagination).to.deep.equal({ totalCount: total, limit: 20, offset: 0, next: 20, hasMore: total > 20 });
    expect(body.results).to.have.length(20);
  });

  it('returns exactly the requested window', async () => {
    const whole = (await list('?limit=100')).body as ListBody;
    const res = await list('?limit=3&offset=2');
    expect(res.status).to.equal(200);
    const body = res.body as ListBody;
    expect(body.pagination).to.deep.equal({
      totalCount: whole.pagination.totalCount,
      limit: 3,
      offset: 2,
      next: 5,
      hasMore: whole.pagination.totalCount > 5,
    });
    expect(body.results.map((r) => r.id)).to.deep.equal(whole.results.slice(2, 5).map((r) => r.id));
  });

  it('accepts the bounds limit=1 and limit=100', async () => {
    expect(((await list('?limit=1')).body as ListBody).results).to.have.length(1);
    const max = (await list('?limit=100')).body as ListBody;
    expect(max.pagination.limit).to.equal(100);
    expect(max.results).to.have.length(Math.min(100, max.pagination.totalCount));
  });

  it('answers an offset past the end with an empty page and the true totalCount', async () => {
    const total = await publishedInDatabase();
    const res = await list(`?offset=${total + 5}&limit=10`);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      results: [],
      pagination: { totalCount: total, limit: 10, offset: total + 5, next: total + 5, hasMore: false },
    });
  });

  it('ignores unknown query parameters', async () => {
    const res = await list('?limit=2&order=title&filter[topic]=data&x=');
    expect(res.status).to.equal(200);
    expect((res.body as ListBody).pagination).to.include({ limit: 2, offset: 0 });
  });

  const bad: [string, string[]][] = [
    ['?limit=0', ['limit']],
    ['?limit=101', ['limit']],
    ['?limit=abc', ['limit']],
    ['?limit=1.5', ['limit']],
    ['?limit=-1', ['limit']],
    ['?limit=1e1', ['limit']],
    ['?limit=%201', ['limit']],
    ['?limit=', ['limit']],
    ['?limit=1&limit=2', ['limit']],
    ['?offset=-1', ['offset']],
    ['?offset=abc', ['offset']],
    ['?offset=0.5', ['offset']],
    ['?offset=', ['offset']],
    ['?offset=1&offset=1', ['offset']],
    ['?offset=99999999999999999999', ['offset']],
    ['?limit=0&offset=-1', ['limit', 'offset']],
  ];
  for (const [query, names] of bad) {
    it(`rejects ${query} with a 400 naming ${names.join(' and ')}`, async () => {
      const res = await list(query);
      const problem = expectInvalidParams(res, names);
      expect(problem.type).to.equal('/problems/invalid-parameters');
      expect(problem.instance).to.equal(`/v1/learning-opportunities${query}`);
    });
  }

  it('names the range an offset must be in, also for one just past it (16 digits)', async () => {
    for (const offset of ['1000000000000000', '9007199254740991', '-1']) {
      const problem = expectInvalidParams(await list(`?offset=${offset}`), ['offset']);
      expect(problem.invalidParams![0]!.reason, offset).to.equal('must be an integer from 0 to 999999999999999');
    }
    const largest = await list('?offset=999999999999999&limit=1');
    expect(largest.status).to.equal(200);
    expect((largest.body as ListBody).pagination.offset).to.equal(999_999_999_999_999);
  });
});
