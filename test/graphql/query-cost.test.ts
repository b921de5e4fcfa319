// One GraphQL request cannot cost the service more than the configured bounds: depth, aliases,
// an estimated cost in which a page costs its limit times its selection, and the response size.
// Each refusal is a QUERY_TOO_COMPLEX error and nothing is resolved.
import { expect } from 'chai';
import { getIntrospectionQuery } from 'graphql';
import { INTROSPECTION_DEPTH } from '../../src/graphql/query-limits.ts';
import { graphql, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { GET_PAGE, onlyError, RECORD_FIELDS } from '../support/graphql-documents.ts';

/** `count` aliases of a full page of 100 records with every field, as in the reported attack. */
const aliasedPages = (count: number) =>
  `{ ${Array.from({ length: count }, (_, i) => `p${i}: learningOpportunities(limit: 100) { results { ...Record } }`).join(' ')} } ${RECORD_FIELDS}`;

describe('GraphQL cost limits', () => {
  const served = useTestApi(['graphql:read']);

  before(async () => {
    for (let i = 0; i < 3; i++) await createRecord(served.api.writes);
  });

  const expectTooComplex = async (query: string, pattern: RegExp) => {
    const res = await graphql(served.api, served.key, query);
    const error = onlyError(res);
    expect(error.extensions?.code, error.message).to.equal('QUERY_TOO_COMPLEX');
    expect(error.message).to.match(pattern);
    expect(res.status).to.equal(400);
    expect(res.body.data).to.equal(undefined); // refused before anything was resolved
  };

  it('serves a full page of 100 records with every field (the largest legitimate read)', async () => {
    const res = await graphql<{ learningOpportunities: { results: unknown[] } }>(served.api, served.key, GET_PAGE, {
      limit: 100,
    });
    expect(res.body.errors, JSON.stringify(res.body.errors)).to.equal(undefined);
    expect(res.body.data?.learningOpportunities.results.length).to.be.at.least(3);
  });

  it('serves the standard introspection query (tools and code generators send it)', async () => {
    const res = await graphql<{ __schema: { types: unknown[] } }>(served.api, served.key, getIntrospectionQuery());
    expect(res.body.errors, JSON.stringify(res.body.errors)).to.equal(undefined);
    expect(res.body.data?.__schema.types.length).to.be.above(10);
  });

  it('serves the introspection query with every option on (Apollo Sandbox and code generators set some)', async () => {
    const query = getIntrospectionQuery({
      descriptions: true,
      specifiedByUrl: true,
      directiveIsRepeatable: true,
      schemaDescription: true,
      inputValueDeprecation: true,
      oneOf: true,
    });
    const res = await graphql<{ __schema: { types: { name: string; inputFields: unknown[] | null }[] } }>(
      served.api,
      served.key,
      query,
    );
    expect(res.body.errors, JSON.stringify(res.body.errors)).to.equal(undefined);
    const input = res.body.data?.__schema.types.find((t) => t.name === 'LearningOpportunityInput');
    expect(input?.inputFields?.length).to.be.above(3);
  });

  it("still prices introspection by its lists: fifteen aliased listings of every argument type's fields are refused", async () => {
    const listing = (alias: string) =>
      `${alias}: __schema { types { name fields { name args { name type { name ofType { name ofType { name fields { name args { name } } } } } } } } }`;
    const query = `{ ${Array.from({ length: 15 }, (_, i) => listing(`a${i}`)).join(' ')} }`;
    await expectTooComplex(query, /costs \d+, more than the limit of 50000/);
    expect((await graphql(served.api, served.key, `{ ${listing('one')} }`)).body.errors).to.equal(undefined);
  });

  it('refuses a 1.5 KB query aliasing ten full pages, by its cost', async () => {
    const query = aliasedPages(10);
    expect(query.length).to.be.below(1600);
    await expectTooComplex(query, /costs \d+, more than the limit of 50000/);
  });

  it('counts the page size asked for: the same aliases over small pages are served', async () => {
    const res = await graphql(served.api, served.key, aliasedPages(10).replaceAll('limit: 100', 'limit: 5'));
    expect(res.body.errors, JSON.stringify(res.body.errors)).to.equal(undefined);
  });

  it('counts a limit given in a variable', async () => {
    const query = `query ($n: Int) { ${Array.from({ length: 10 }, (_, i) => `p${i}: learningOpportunities(limit: $n) { results { ...Record } }`).join(' ')} } ${RECORD_FIELDS}`;
    expect((await graphql(served.api, served.key, query, { n: 2 })).body.errors).to.equal(undefined);
    const error = onlyError(await graphql(served.api, served.key, query, { n: 100 }));
    expect(error.extensions?.code).to.equal('QUERY_TOO_COMPLEX');
  });

  // The cost of a document is kept once it passes, unless its variables can change it.
  it('counts pages that a directive includes through a variable', async () => {
    const query = `query ($all: Boolean!) { ${Array.from({ length: 10 }, (_, i) => `p${i}: learningOpportunities(limit: 100) @include(if: $all) { results { ...Record } }`).join(' ')} } ${RECORD_FIELDS}`;
    expect((await graphql(served.api, served.key, query, { all: false })).body.errors).to.equal(undefined);
    const error = onlyError(await graphql(served.api, served.key, query, { all: true }));
    expect(error.extensions?.code).to.equal('QUERY_TOO_COMPLEX');
  });

  it('counts facets and a search given in variables', async () => {
    const query = `query ($facets: [Facet!], $q: String) { learningOpportunities(limit: 100, facets: $facets, search: $q) { results { ...Record } } } ${RECORD_FIELDS}`;
    expect((await graphql(served.api, served.key, query, {})).body.errors).to.equal(undefined);
    const error = onlyError(
      await graphql(served.api, served.key, query, {
        facets: ['FORMAT', 'LANGUAGE', 'TOPIC', 'PROVIDER', 'COUNTRY'],
        q: 'a',
      }),
    );
    expect(error.extensions?.code).to.equal('QUERY_TOO_COMPLEX');
  });

  it('answers the same document the same way each time it comes', async () => {
    for (let i = 0; i < 3; i++) {
      await expectTooComplex(aliasedPages(10), /costs \d+, more than the limit of 50000/);
      const res = await graphql(served.api, served.key, GET_PAGE, { limit: 100 });
      expect(res.body.errors, JSON.stringify(res.body.errors)).to.equal(undefined);
    }
  });

  it('refuses more than 15 aliases, even cheap ones', async () => {
    await expectTooComplex(
      `{ ${Array.from({ length: 16 }, (_, i) => `a${i}: __typename`).join(' ')} }`,
      /Aliases limit of 15 exceeded, found 16/,
    );
  });

  it('refuses a selection deeper than 8 fields', async () => {
    await expectTooComplex(
      '{ __type(name: "Query") { fields { type { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } }',
      /depth limit of 8 exceeded, found 9/,
    );
  });

  it('refuses a `__schema` deeper than the standard introspection query (served above: 15 levels)', async () => {
    const nested = (n: number): string => (n === 0 ? 'name' : `ofType { ${nested(n - 1)} }`);
    // __schema, types, fields, type, 11 ofType and name: 16 levels (the standard query has 15).
    await expectTooComplex(
      `{ __schema { types { fields { type { ${nested(11)} } } } } }`,
      new RegExp(`depth limit of ${INTROSPECTION_DEPTH} exceeded, found 16`),
    );
  });

  it('refuses fragments that expand to more fields than it will price', async () => {
    const levels = 16; // each fragment spreads the next twice: 2^16 expansions of the last one
    const fragments = Array.from(
      { length: levels },
      (_, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`,
    ).join(' ');
    const started = performance.now();
    await expectTooComplex(
      `{ ...F0 } ${fragments} fragment F${levels} on Query { __typename }`,
      /more than 10000 fields/,
    );
    expect(performance.now() - started).to.be.below(2000);
  });
});

describe('GraphQL response size limit', () => {
  const served = useTestApi(['graphql:read'], { graphql: { maxResponseBytes: 4096 } });

  before(async () => {
    for (let i = 0; i < 3; i++) await createRecord(served.api.writes, { description: 'é'.repeat(1500) });
  });

  it('answers QUERY_TOO_COMPLEX with HTTP 400 instead of a response over GRAPHQL_MAX_RESPONSE_BYTES', async () => {
    // Every field (the stored pages' path), and a few fields (executed field by field).
    for (const [query, variables] of [
      [GET_PAGE, { limit: 3 }],
      ['{ learningOpportunities(limit: 3) { results { id description } } }', {}],
    ] as const) {
      const res = await graphql(served.api, served.key, query, variables);
      expect(res.status, query).to.equal(400);
      const error = onlyError(res);
      expect(error.extensions?.code).to.equal('QUERY_TOO_COMPLEX');
      expect(error.message).to.contain('larger than 4096 bytes');
      expect(res.body.data).to.equal(null);
    }
    // Counted in bytes: 1,500 two-byte characters fit in 4096 as characters, not as bytes.
    const oneRecord = await graphql(
      served.api,
      served.key,
      '{ learningOpportunities(limit: 2) { results { description } } }',
    );
    expect(oneRecord.status).to.equal(400);
    const small = await graphql(
      served.api,
      served.key,
      '{ learningOpportunities(limit: 1) { results { id description } pagination { totalCount } } }',
    );
    expect(small.status).to.equal(200);
    expect(small.body.errors).to.equal(undefined);
    expect(
      (small.body.data as { learningOpportunities: { results: { description: string }[] } }).learningOpportunities
        .results[0]!.description,
    ).to.equal('é'.repeat(1500));
  });
});
