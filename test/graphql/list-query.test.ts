// GraphQL learningOpportunities(filter, search, sort, facets): the same records, order, totals and
// facet counts as the REST list's parameters, plus `status` for internal readers (drafts and
// archived records); bad arguments are BAD_USER_INPUT naming them; the cost limit prices facets
// and search.
import { expect } from 'chai';
import { FACET_COST, SEARCH_COST } from '../../src/graphql/query-limits.ts';
import { getJson, graphql, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { GET_PAGE, onlyError, RECORD_FIELDS } from '../support/graphql-documents.ts';

type Page = {
  results: { id: string; status: string; title: string }[];
  pagination: { totalCount: number; offset: number; next: number; hasMore: boolean };
  facets: Record<string, { value: string; count: number }[] | null> | null;
};
const LIST = `query($filter: LearningOpportunityFilter, $search: String, $sort: LearningOpportunitySort, $facets: [Facet!], $limit: Int, $offset: Int) {
  learningOpportunities(filter: $filter, search: $search, sort: $sort, facets: $facets, limit: $limit, offset: $offset) {
    results { id status title } pagination { totalCount offset next hasMore } facets { format { value count } topic { value count } country { value count } }
  }
}`;

describe('GraphQL learningOpportunities filter, search, sort and facets', () => {
  const served = useTestApi({ key: ['graphql:read'], restKey: ['catalog:read'] });
  const list = async (variables: Record<string, unknown>) => {
    const res = await graphql<{ learningOpportunities: Page }>(served.api, served.key, LIST, variables);
    expect(res.body.errors, JSON.stringify(res.body.errors)).to.equal(undefined);
    return res.body.data!.learningOpportunities;
  };

  before(async () => {
    for (let i = 0; i < 6; i++)
      await createRecord(served.api.writes, {
        title: `Graph filter ${i} welding`,
        format: i % 2 ? 'ONLINE' : 'HYBRID',
        topics: [`gq-topic-${i % 3}`],
      });
    await createRecord(
      served.api.writes,
      { title: 'Graph filter draft welding', format: 'ONLINE', topics: ['gq-topic-0'] },
      { publish: false },
    );
  });

  it('answers as the REST list does for the same filter, search and sort (published records)', async () => {
    const filter = { format: ['ONLINE', 'HYBRID'], topic: ['gq-topic-0', 'gq-topic-1'], status: ['PUBLISHED'] };
    const page = await list({
      filter,
      search: 'graph filter weld',
      sort: 'RELEVANCE',
      facets: ['FORMAT', 'TOPIC'],
      limit: 100,
    });
    const rest = (
      await getJson(
        served.api,
        '/v1/learning-opportunities?format=ONLINE,HYBRID&topic=gq-topic-0,gq-topic-1&q=graph%20filter%20weld&sort=relevance&facets=format,topic&limit=100',
        served.restKey,
      )
    ).body as Page;
    expect(page.results.map((r) => r.id)).to.deep.equal(rest.results.map((r) => r.id));
    expect(page.pagination.totalCount).to.equal(rest.pagination.totalCount).and.to.equal(4);
    expect(page.facets).to.deep.equal({ format: rest.facets!.format, topic: rest.facets!.topic, country: null });
  });

  it('says where the next page starts and whether one follows, as the REST list does, filtered or not', async () => {
    for (const filter of [{ topic: ['gq-topic-0', 'gq-topic-1'] }, {}]) {
      const first = await list({ filter, limit: 3 });
      const total = first.pagination.totalCount;
      expect(first.pagination).to.deep.include({ offset: 0, next: 3, hasMore: total > 3 });
      const last = await list({ filter, limit: 3, offset: total - 1 });
      expect(last.results).to.have.length(1);
      expect(last.pagination).to.deep.include({ next: total, hasMore: false });
      const past = await list({ filter, limit: 3, offset: total + 5 });
      expect(past.pagination).to.deep.include({ next: total + 5, hasMore: false });
    }
  });

  it('lists every status to internal readers, or those named in filter.status', async () => {
    const all = await list({ filter: { topic: ['gq-topic-0'] }, limit: 100 });
    expect(all.results.map((r) => r.status).sort()).to.deep.equal(['DRAFT', 'PUBLISHED', 'PUBLISHED']);
    const drafts = await list({ filter: { status: ['DRAFT'], topic: ['gq-topic-0'] } });
    expect(drafts.results.map((r) => r.title)).to.deep.equal(['Graph filter draft welding']);
    const onlyDrafts = await list({ filter: { status: ['DRAFT'] }, limit: 100 });
    // Other files' drafts may be in the database too (more than a page of them).
    expect(onlyDrafts.results.length).to.equal(Math.min(100, onlyDrafts.pagination.totalCount)).and.to.be.above(0);
    expect(onlyDrafts.results.every((r) => r.status === 'DRAFT')).to.equal(true);
  });

  it('refuses bad arguments as BAD_USER_INPUT naming them', async () => {
    for (const [variables, name] of [
      [{ filter: { updatedSince: 'yesterday' } }, 'filter.updatedSince'],
      [{ filter: { topic: Array.from({ length: 51 }, (_, i) => `t${i}`) } }, 'filter.topic'],
      [{ sort: 'RELEVANCE' }, 'sort'],
      [{ search: '  ++ ' }, 'search'],
      [{ filter: { city: ['a\u0000b'] } }, 'filter.city'],
      [{ search: 'a\u0000b' }, 'search'],
      // Half of a surrogate pair alone: it was searched for as U+FFFD (REST refuses %ED%A0%80).
      [{ search: 'a\ud800b' }, 'search'],
      [{ filter: { provider: ['x\udc00'] } }, 'filter.provider'],
    ] as [Record<string, unknown>, string][]) {
      const error = onlyError(await graphql(served.api, served.key, LIST, variables));
      expect(error.extensions?.code).to.equal('BAD_USER_INPUT');
      expect(error.extensions?.invalidParams?.map((p) => p.name)).to.deep.equal([name]);
    }
  });

  it('prices facets and search in the cost limit', async () => {
    // A full page of every field passes; with every facet and a search it costs more than the limit.
    expect((await graphql(served.api, served.key, GET_PAGE, { limit: 100 })).body.errors).to.equal(undefined);
    const heavy = `{ learningOpportunities(limit: 100, search: "weld", facets: [FORMAT, LANGUAGE, TOPIC, PROVIDER, COUNTRY]) { results { ...Record } } } ${RECORD_FIELDS}`;
    const error = onlyError(await graphql(served.api, served.key, heavy));
    expect(error.extensions?.code).to.equal('QUERY_TOO_COMPLEX');
    expect(FACET_COST * 5 + SEARCH_COST).to.be.above(0);
    const light = `{ learningOpportunities(limit: 10, search: "weld", facets: [FORMAT, TOPIC]) { results { ...Record } facets { format { value count } } } } ${RECORD_FIELDS}`;
    expect((await graphql(served.api, served.key, light)).body.errors).to.equal(undefined);
  });
});
