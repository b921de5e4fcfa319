// One record, one rendering: GET /v1/.../{id}, its item in a list page, and the answer of the
// mutation that produced the state are the same record (the REST bodies byte for byte).
import { expect } from 'chai';
import { getJson, graphql, useTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { GET_ONE, GET_PAGE, mutate, type RecordJson } from '../support/graphql-documents.ts';

describe('the same record bytes everywhere', () => {
  const served = useTestApi(['catalog:read', 'graphql:read', 'catalog:write']);

  /** The list page holding `id`, walked in pages of 100 (other records may be newer). */
  async function listPageWith(id: string): Promise<string> {
    for (let offset = 0; ; offset += 100) {
      const list = await getJson(served.api, `/v1/learning-opportunities?limit=100&offset=${offset}`, served.key);
      const body = list.body as { results: { id: string }[]; pagination: { totalCount: number } };
      if (body.results.some((r) => r.id === id)) return list.text;
      if (offset + 100 >= body.pagination.totalCount) throw new Error(`${id} is not listed`);
    }
  }

  /** Asserts that the list carries exactly the GET-one bytes as one of its items. */
  async function expectListed(id: string, bytes: string): Promise<void> {
    const page = await listPageWith(id);
    const at = page.indexOf(bytes);
    expect(at, 'the GET-one bytes appear verbatim in the list').to.be.greaterThan(0);
    expect(page[at - 1]).to.be.oneOf(['[', ',']);
    expect(page[at + bytes.length]).to.be.oneOf([']', ',']);
  }

  it('after publish: GET one = list item = the mutation answer = the internal query', async () => {
    const input = buildLearningOpportunityInput({
      title: 'Zürich — “quotes”, emoji 🎓 and \\ backslash',
      description: 'line\nbreak\ttab </script>',
    });
    await mutate(served.api, served.key, 'upsert', input);
    const published = await mutate(served.api, served.key, 'publish', input.id);

    const one = await getJson(served.api, `/v1/learning-opportunities/${input.id}`, served.key);
    expect(one.status).to.equal(200);
    await expectListed(input.id, one.text);
    expect(JSON.parse(one.text)).to.deep.equal(published);

    const internal = await graphql<{ learningOpportunity: RecordJson }>(served.api, served.key, GET_ONE, {
      id: input.id,
    });
    expect(internal.body.data?.learningOpportunity).to.deep.equal(published);
    const page = await graphql<{ learningOpportunities: { results: RecordJson[] } }>(served.api, served.key, GET_PAGE, {
      limit: 100,
    });
    expect(page.body.data?.learningOpportunities.results.find((r) => r.id === input.id)).to.deep.equal(published);
  });

  it('after an update of a published record the three stay equal', async () => {
    const input = buildLearningOpportunityInput();
    await mutate(served.api, served.key, 'upsert', input);
    await mutate(served.api, served.key, 'publish', input.id);
    const updated = await mutate(served.api, served.key, 'upsert', {
      ...input,
      title: 'Updated',
      sessions: (input.sessions as unknown[]).slice(1),
    });
    const one = await getJson(served.api, `/v1/learning-opportunities/${input.id}`, served.key);
    await expectListed(input.id, one.text);
    expect(JSON.parse(one.text)).to.deep.equal(updated);
  });

  it('renders every field, absent optionals as null and empty collections as []', async () => {
    const input = buildLearningOpportunityInput({
      summary: null,
      description: null,
      url: null,
      provider: null,
      language: null,
      topics: null,
      price: null,
      sessions: null,
      deadlines: [],
      faqs: null,
      externalReviews: null,
      accolades: null,
    });
    await mutate(served.api, served.key, 'upsert', input);
    await mutate(served.api, served.key, 'publish', input.id);
    const one = await getJson(served.api, `/v1/learning-opportunities/${input.id}`, served.key);
    const body = one.body as Record<string, unknown>;
    expect(Object.keys(body)).to.deep.equal([
      'id',
      'title',
      'summary',
      'description',
      'url',
      'provider',
      'format',
      'language',
      'topics',
      'price',
      'status',
      'publishedAt',
      'createdAt',
      'updatedAt',
      'sessions',
      'deadlines',
      'faqs',
      'externalReviews',
      'accolades',
    ]);
    expect(body).to.deep.include({
      summary: null,
      description: null,
      url: null,
      provider: null,
      language: null,
      price: null,
      topics: [],
      sessions: [],
      deadlines: [],
      faqs: [],
      externalReviews: [],
      accolades: [],
    });
    for (const field of ['publishedAt', 'createdAt', 'updatedAt'])
      expect(body[field], field).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });
});
