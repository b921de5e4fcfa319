// One record, one rendering: GET /v1/.../{id}, its item in a list page, and the answer of the
// mutation that produced the state are the same record (the REST bodies byte for byte).
import { expect } from 'chai';
import type { Api } from '../../src/service.ts';
import { createTestKey, getJson, graphql, startTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { GET_ONE, GET_PAGE, mutate, type RecordJson } from '../support/graphql-documents.ts';

describe('the same record bytes everywhere', () => {
  let api: Api;
  let key: string;

  before(async () => {
    api = await startTestApi();
    key = await createTestKey(['catalog:read', 'graphql:read', 'catalog:write']);
  });
  after(() => api.close());

  /** The exact bytes of `id` inside the first list page (it is the most recently updated record). */
  async function listItemBytes(id: string): Promise<string> {
    const list = await getJson(api, '/v1/learning-opportunities?limit=1', key);
    const body = list.body as { results: { id: string }[] };
    expect(body.results[0]?.id, 'the record just changed leads the list').to.equal(id);
    // the page is {"results":[<item>],"pagination":...}: cut the single item out verbatim
    const start = list.text.indexOf('[') + 1;
    const end = list.text.lastIndexOf('],"pagination"');
    return list.text.slice(start, end);
  }

  it('after publish: GET one = list item = the mutation answer = the internal query', async () => {
    const input = buildLearningOpportunityInput({ title: 'Zürich — “quotes”, emoji 🎓 and \\ backslash', description: 'line\nbreak\ttab </script>' });
    await mutate(api, key, 'upsert', input);
    const published = await mutate(api, key, 'publish', input.id);

    const one = await getJson(api, `/v1/learning-opportunities/${input.id}`, key);
    expect(one.status).to.equal(200);
    expect(await listItemBytes(input.id)).to.equal(one.text);
    expect(JSON.parse(one.text)).to.deep.equal(published);

    const internal = await graphql<{ learningOpportunity: RecordJson }>(api, key, GET_ONE, { id: input.id });
    expect(internal.body.data?.learningOpportunity).to.deep.equal(published);
    const page = await graphql<{ learningOpportunities: { results: RecordJson[] } }>(api, key, GET_PAGE, { limit: 1 });
    expect(page.body.data?.learningOpportunities.results[0]).to.deep.equal(published);
  });

  it('after an update of a published record the three stay equal', async () => {
    const input = buildLearningOpportunityInput();
    await mutate(api, key, 'upsert', input);
    await mutate(api, key, 'publish', input.id);
    const updated = await mutate(api, key, 'upsert', { ...input, title: 'Updated', sessions: (input.sessions as unknown[]).slice(1) });
    const one = await getJson(api, `/v1/learning-opportunities/${input.id}`, key);
    expect(await listItemBytes(input.id)).to.equal(one.text);
    expect(JSON.parse(one.text)).to.deep.equal(updated);
  });

  it('renders every field, absent optionals as null and empty collections as []', async () => {
    const input = buildLearningOpportunityInput({
      summary: null, description: null, url: null, provider: null, language: null, topics: null, price: null,
      sessions: null, deadlines: [], faqs: null, externalReviews: null, accolades: null,
    });
    await mutate(api, key, 'upsert', input);
    await mutate(api, key, 'publish', input.id);
    const one = await getJson(api, `/v1/learning-opportunities/${input.id}`, key);
    const body = one.body as Record<string, unknown>;
    expect(Object.keys(body)).to.deep.equal([
      'id', 'title', 'summary', 'description', 'url', 'provider', 'format', 'language', 'topics', 'price', 'status',
      'publishedAt', 'createdAt', 'updatedAt', 'sessions', 'deadlines', 'faqs', 'externalReviews', 'accolades',
    ]);
    expect(body).to.deep.include({ summary: null, description: null, url: null, provider: null, language: null, price: null, topics: [], sessions: [], deadlines: [], faqs: [], externalReviews: [], accolades: [] });
    for (const field of ['publishedAt', 'createdAt', 'updatedAt']) expect(body[field], field).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });
});
