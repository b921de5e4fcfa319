// A learningOpportunities page that asks for every stored field is answered with the stored bytes
// (src/graphql/stored-results.ts, run by compiled-execution.ts): the same response, byte for byte,
// as field-by-field execution gives, and at a cost near the REST page's (issue 22 item 9). Any other
// selection (aliases, __typename, another order, a field fewer) is executed field by field.
import { expect } from 'chai';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { connectDatabase, type Database } from '../../src/app/database.ts';
import type { Api } from '../../src/app/service.ts';
import { createTestKey, getJson, startTestApi } from '../support/api.ts';
import { cloneTestDatabase } from '../support/database.ts';
import { RECORD_FIELDS } from '../support/graphql-documents.ts';

const PAGE_ARGS = '$limit: Int, $offset: Int, $filter: LearningOpportunityFilter, $facets: [Facet!]';
const page = (results: string, fragments = RECORD_FIELDS) =>
  `query (${PAGE_ARGS}) { learningOpportunities(limit: $limit, offset: $offset, filter: $filter, facets: $facets) { pagination { totalCount limit offset } results { ${results} } facets { format { value count } } } } ${fragments}`;
// The same selection with `id` twice: graphql-js merges the two, so the answer is the same, but it
// is no longer the plain stored shape, so it is executed field by field.
const STORED = page('...Record');
const FIELD_BY_FIELD = page('...Record id');

describe('GraphQL page of every stored field', () => {
  let api: Api;
  let key: string;
  let restKey: string;
  // A database of its own: the other files of a serial run keep their small catalog.
  let db: Database;
  let drop: () => Promise<void>;
  const post = async (query: string, variables: Record<string, unknown> = {}) => {
    const res = await fetch(`${api.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    const text = await res.text();
    return { status: res.status, text };
  };

  before(async function () {
    this.timeout(120_000);
    const clone = await cloneTestDatabase(
      JSON.parse(process.env.LODS_TEST_POSTGRES!) as { adminUrl: string; template: string },
    );
    drop = clone.drop;
    db = await connectDatabase(clone.url, { poolMax: 10, connectTimeoutMs: 3000, migrate: false });
    api = await startTestApi({ db });
    key = await createTestKey(['graphql:read'], db);
    restKey = await createTestKey(['catalog:read'], db);
    await seedCatalog(db.pool, { count: 250, seed: 2290, batchSize: 125 });
  });
  after(async function () {
    this.timeout(60_000);
    await api?.close();
    await db?.close();
    await drop?.();
  });

  it('answers with the same bytes as field-by-field execution, for every page, filter and facets', async () => {
    for (const variables of [
      { limit: 100 },
      { limit: 100, offset: 200 },
      { limit: 7, offset: 3, filter: { format: ['ONLINE'] }, facets: ['FORMAT'] },
      { limit: 5, offset: 1000 },
    ]) {
      const [stored, executed] = [await post(STORED, variables), await post(FIELD_BY_FIELD, variables)];
      expect(stored.status).to.equal(200);
      expect(stored.text).to.not.include('"errors"');
      expect(stored.text, JSON.stringify(variables)).to.equal(executed.text);
    }
    // Inline, without a fragment, and the REST page's records are the same bytes.
    const inline = await post(
      page(RECORD_FIELDS.replace(/^\s*fragment Record on LearningOpportunity \{|\}\s*$/g, ''), ''),
      { limit: 100 },
    );
    expect(inline.text).to.equal((await post(STORED, { limit: 100 })).text);
    const rest = await getJson(api, '/v1/learning-opportunities?limit=100', restKey);
    const results = (JSON.parse(inline.text) as { data: { learningOpportunities: { results: unknown } } }).data
      .learningOpportunities.results;
    expect(JSON.stringify(results)).to.equal(JSON.stringify((rest.body as { results: unknown }).results));
  });

  it('executes any other selection field by field: aliases, __typename, another order, a field fewer', async () => {
    const answer = async (results: string) => {
      const res = await post(page(results, results.includes('...Record') ? RECORD_FIELDS : ''), { limit: 3 });
      return (JSON.parse(res.text) as { data: { learningOpportunities: { results: Record<string, unknown>[] } } }).data
        .learningOpportunities.results;
    };
    expect(Object.keys((await answer('__typename ...Record'))[0]!)[0]).to.equal('__typename');
    expect((await answer('...Record name: title'))[0]!.name).to.be.a('string');
    expect(Object.keys((await answer('updatedAt ...Record'))[0]!)[0]).to.equal('updatedAt');
    const fewer = await answer(
      RECORD_FIELDS.replace(/^\s*fragment Record on LearningOpportunity \{|\}\s*$/g, '').replace(
        'accolades { id title issuer awardedAt url }',
        'accolades { id title }',
      ),
    );
    expect(Object.keys((fewer[0]!.accolades as object[])[0] ?? { id: 1, title: 2 })).to.deep.equal(['id', 'title']);
  });

  it('costs less CPU time than the same page executed field by field, and near the REST page (at most 2x)', async () => {
    // CPU time of this process (the service and the client alike) per request, not wall time: on a
    // busy machine wall time mostly measures the wait for a core. Interleaved, medians. The stored
    // page measured 1.1-1.5x the REST page here, field by field about 2x; a bound of 1.5x against
    // REST alone failed under a loaded full suite (1.51x, 1.58x), so the stored page is held
    // against the field-by-field one of the same records, measured beside it.
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
    const cpuMs = async (request: () => Promise<number>) => {
      const before = process.cpuUsage();
      expect(await request()).to.equal(200);
      const used = process.cpuUsage(before);
      return (used.user + used.system) / 1000;
    };
    const [storedMs, fieldsMs, restMs]: [number[], number[], number[]] = [[], [], []];
    for (let i = 0; i < 30; i++) {
      const offset = (i % 2) * 100;
      const g = await cpuMs(async () => (await post(STORED, { limit: 100, offset })).status);
      const f = await cpuMs(async () => (await post(FIELD_BY_FIELD, { limit: 100, offset })).status);
      const r = await cpuMs(
        async () => (await getJson(api, `/v1/learning-opportunities?limit=100&offset=${offset}`, restKey)).status,
      );
      if (i < 5) continue; // warm-up
      storedMs.push(g);
      fieldsMs.push(f);
      restMs.push(r);
    }
    const [g, f, r] = [median(storedMs), median(fieldsMs), median(restMs)];
    const said = `CPU per page: GraphQL stored ${g.toFixed(1)} ms, field by field ${f.toFixed(1)} ms, REST ${r.toFixed(1)} ms`;
    if (process.env.TEST_PRINT_TIMES) console.log(said);
    expect(g, said).to.be.at.most(0.85 * f);
    expect(g, said).to.be.at.most(2 * r);
  });
});
