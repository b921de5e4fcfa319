// Internal GraphQL queries: the internal view (drafts and archived included), the REST paging
// rules with BAD_USER_INPUT + invalidParams, and the scopes (graphql:read to read).
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { testDb } from '../hooks.ts';
import { createTestKey, graphql, useTestApi } from '../support/api.ts';
import { createRecord, resetCatalog } from '../support/factories.ts';
import { GET_ONE, GET_PAGE, onlyError, type RecordJson } from '../support/graphql-documents.ts';

type PageData = {
  learningOpportunities: { results: RecordJson[]; pagination: { totalCount: number; limit: number; offset: number } };
};

async function recordsInDatabase(): Promise<number> {
  const { rows } = await testDb().pool.query<{ n: number }>('select count(*)::int as n from learning_opportunity');
  return rows[0]!.n;
}

describe('GraphQL queries', () => {
  const served = useTestApi({ reader: ['graphql:read'] });
  const page = (variables: Record<string, unknown>) =>
    graphql<PageData>(served.api, served.reader, GET_PAGE, variables);

  before(async () => {
    await resetCatalog(); // exact totals and a known order below
  });

  it('learningOpportunity sees drafts, published and archived records', async () => {
    const draft = await createRecord(served.api.writes, {}, { publish: false });
    const published = await createRecord(served.api.writes);
    const archived = await createRecord(served.api.writes);
    await served.api.writes.archive(archived.id);
    for (const [record, status] of [
      [draft, 'DRAFT'],
      [published, 'PUBLISHED'],
      [archived, 'ARCHIVED'],
    ] as const) {
      const res = await graphql<{ learningOpportunity: RecordJson }>(served.api, served.reader, GET_ONE, {
        id: record.id,
      });
      expect(res.status).to.equal(200);
      expect(res.body.errors).to.equal(undefined);
      expect(res.body.data?.learningOpportunity).to.include({ id: record.id, status });
    }
  });

  it('learningOpportunity is null for an unknown id and BAD_USER_INPUT for a malformed one', async () => {
    const unknown = await graphql(served.api, served.reader, GET_ONE, { id: randomUUID() });
    expect(unknown.body).to.deep.equal({ data: { learningOpportunity: null } });
    const malformed = await graphql(served.api, served.reader, GET_ONE, { id: 'not-a-uuid' });
    const error = onlyError(malformed);
    expect(error.extensions?.code).to.equal('BAD_USER_INPUT');
    expect(error.extensions?.invalidParams).to.deep.equal([{ name: 'id', reason: 'must be a UUID' }]);
  });

  it('learningOpportunities lists every status, counts every record, defaults to limit 20 / offset 0', async () => {
    const draft = await createRecord(served.api.writes, {}, { publish: false });
    const res = await page({});
    expect(res.body.errors).to.equal(undefined);
    const data = res.body.data!.learningOpportunities;
    const total = await recordsInDatabase();
    expect(data.pagination).to.deep.equal({ totalCount: total, limit: 20, offset: 0 });
    expect(data.results).to.have.length(Math.min(20, total));
    // newest first: the draft just written leads the list
    expect(data.results[0]!.id).to.equal(draft.id);
    const statuses = new Set(
      (await page({ limit: 100 })).body.data!.learningOpportunities.results.map((r) => r.status),
    );
    expect([...statuses]).to.include.members(['DRAFT', 'PUBLISHED', 'ARCHIVED']);
  });

  it('pages in updatedAt desc, id desc order and answers an offset past the end with an empty page', async () => {
    const all = (await page({ limit: 100 })).body.data!.learningOpportunities;
    const sorted = [...all.results].sort((a, b) =>
      a.updatedAt === b.updatedAt ? (a.id < b.id ? 1 : -1) : a.updatedAt < b.updatedAt ? 1 : -1,
    );
    expect(all.results.map((r) => r.id)).to.deep.equal(sorted.map((r) => r.id));
    const window = (await page({ limit: 2, offset: 1 })).body.data!.learningOpportunities;
    expect(window.results.map((r) => r.id)).to.deep.equal(all.results.slice(1, 3).map((r) => r.id));
    const past = (await page({ limit: 5, offset: all.pagination.totalCount + 1 })).body.data!.learningOpportunities;
    expect(past).to.deep.equal({
      results: [],
      pagination: { totalCount: all.pagination.totalCount, limit: 5, offset: all.pagination.totalCount + 1 },
    });
  });

  const badPaging: [Record<string, unknown>, string[]][] = [
    [{ limit: 0 }, ['limit']],
    [{ limit: 101 }, ['limit']],
    [{ limit: -5 }, ['limit']],
    [{ offset: -1 }, ['offset']],
    [{ limit: 0, offset: -1 }, ['limit', 'offset']],
  ];
  for (const [variables, names] of badPaging) {
    it(`rejects ${JSON.stringify(variables)} with BAD_USER_INPUT naming ${names.join(' and ')}`, async () => {
      const error = onlyError(await page(variables));
      expect(error.extensions?.code).to.equal('BAD_USER_INPUT');
      expect(error.extensions?.invalidParams?.map((p) => p.name)).to.deep.equal(names);
    });
  }

  it('names the range GraphQL allows for offset (its Int is 32-bit), and refuses one above it at the type level', async () => {
    const error = onlyError(await page({ offset: -1 }));
    expect(error.extensions?.invalidParams).to.deep.equal([
      { name: 'offset', reason: 'must be an integer from 0 to 2147483647' },
    ]);
    expect((await page({ offset: 2_147_483_647 })).body.data!.learningOpportunities.results).to.deep.equal([]);
    const res = await page({ offset: 2_147_483_648 });
    expect(res.status).to.equal(400);
    expect(onlyError(res).extensions?.code).to.equal('BAD_USER_INPUT');
  });

  for (const value of [1.5, 'abc', '10']) {
    it(`rejects limit ${JSON.stringify(value)} at the GraphQL type level`, async () => {
      const res = await page({ limit: value });
      expect(res.status).to.equal(400);
      expect(onlyError(res).extensions?.code).to.equal('BAD_USER_INPUT');
      expect(res.body.data).to.equal(undefined);
    });
  }

  it('is UNAUTHENTICATED (HTTP 401, WWW-Authenticate) without a key or with an unknown one', async () => {
    for (const key of [null, 'lods_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']) {
      const res = await fetch(`${served.api.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify({ query: '{ learningOpportunities { pagination { totalCount } } }' }),
      });
      expect(res.status).to.equal(401);
      expect(res.headers.get('www-authenticate')).to.match(/^Bearer\b/);
      const body = (await res.json()) as { data?: unknown; errors: { extensions: { code: string } }[] };
      expect(body.errors[0]!.extensions.code).to.equal('UNAUTHENTICATED');
      expect(body.data).to.equal(undefined);
    }
  });

  it('is FORBIDDEN for a key without graphql:read, even with catalog:read and catalog:write', async () => {
    const key = await createTestKey(['catalog:read', 'catalog:write']);
    for (const [document, variables] of [
      [GET_PAGE, {}],
      [GET_ONE, { id: randomUUID() }],
    ] as const) {
      const res = await graphql(served.api, key, document, variables);
      const error = onlyError(res);
      expect(error.extensions?.code).to.equal('FORBIDDEN');
      expect(error.message).to.include('graphql:read');
    }
  });
});
