// The four mutations of the content platform and the lifecycle they drive:
// upsert -> DRAFT, publish (DRAFT/ARCHIVED -> PUBLISHED, idempotent), archive (PUBLISHED -> ARCHIVED,
// not from DRAFT), delete (then NOT_FOUND), and catalog:write as the only scope that may write.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson, graphql, useTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { ARCHIVE, DELETE, GET_ONE, mutate, onlyError, PUBLISH, UPSERT } from '../support/graphql-documents.ts';

const MUTATIONS = { publish: PUBLISH, archive: ARCHIVE, delete: DELETE } as const;

async function rowCount(table: string, id: string): Promise<number> {
  const column = table === 'learning_opportunity' ? 'id' : 'learning_opportunity_id';
  const { rows } = await testDb().pool.query<{ n: number }>(
    `select count(*)::int as n from ${table} where ${column} = $1`,
    [id],
  );
  return rows[0]!.n;
}

describe('GraphQL mutations and the lifecycle', () => {
  const served = useTestApi({ writer: ['catalog:write'], reader: ['catalog:read', 'graphql:read'] });

  it('upsert creates a DRAFT with the given content, nested collections included, invisible to REST', async () => {
    const input = buildLearningOpportunityInput();
    const created = await mutate(served.api, served.writer, 'upsert', input);
    expect(created).to.include({ id: input.id, title: input.title, status: 'DRAFT', publishedAt: null });
    expect(created.createdAt).to.equal(created.updatedAt);
    expect(created.sessions).to.deep.equal(input.sessions);
    expect(created.deadlines).to.deep.equal(input.deadlines);
    expect(created.faqs).to.deep.equal(input.faqs);
    expect(created.externalReviews).to.deep.equal(input.externalReviews);
    expect(created.accolades).to.deep.equal(input.accolades);
    expect(created).to.deep.include({ provider: input.provider, price: input.price, topics: input.topics });
    expect((await getJson(served.api, `/v1/learning-opportunities/${input.id}`, served.reader)).status).to.equal(404);
  });

  it('upsert replaces the content of an existing record, nested collections and their order included', async () => {
    const input = buildLearningOpportunityInput();
    await mutate(served.api, served.writer, 'upsert', input);
    const sessions = input.sessions as { id: string }[];
    const replacement = buildLearningOpportunityInput({
      id: input.id,
      title: 'Replaced title',
      summary: null,
      provider: null,
      price: null,
      topics: [],
      // reversed, one kept, one new
      sessions: [
        { ...sessions[1]!, capacity: 12 },
        {
          id: randomUUID(),
          startsAt: '2027-05-01T08:00:00.000Z',
          endsAt: null,
          timezone: 'UTC',
          format: null,
          location: null,
          capacity: 0,
        },
        sessions[0],
      ],
      deadlines: [],
      faqs: null,
    });
    const replaced = await mutate(served.api, served.writer, 'upsert', replacement);
    expect(replaced).to.include({
      title: 'Replaced title',
      summary: null,
      provider: null,
      price: null,
      status: 'DRAFT',
    });
    expect(replaced.topics).to.deep.equal([]);
    expect(replaced.deadlines).to.deep.equal([]);
    expect(replaced.faqs).to.deep.equal([]);
    expect((replaced.sessions as { id: string }[]).map((s) => s.id)).to.deep.equal(
      (replacement.sessions as { id: string }[]).map((s) => s.id),
    );
    expect(replaced.sessions).to.deep.equal(replacement.sessions);
    expect(await rowCount('lo_session', input.id)).to.equal(3);
    expect(await rowCount('lo_deadline', input.id)).to.equal(0);
    // the stored state, read back, is the replaced one
    const read = await graphql<{ learningOpportunity: unknown }>(served.api, served.reader, GET_ONE, { id: input.id });
    expect(read.body.data?.learningOpportunity).to.deep.equal(replaced);
  });

  it('publish turns a DRAFT into PUBLISHED (visible over REST); publishing again changes nothing', async () => {
    const input = buildLearningOpportunityInput();
    const draft = await mutate(served.api, served.writer, 'upsert', input);
    const published = await mutate(served.api, served.writer, 'publish', input.id);
    expect(published.status).to.equal('PUBLISHED');
    expect(published.publishedAt).to.equal(published.updatedAt);
    expect(published.updatedAt > draft.updatedAt).to.equal(true);
    expect(published.createdAt).to.equal(draft.createdAt);
    const rest = await getJson(served.api, `/v1/learning-opportunities/${input.id}`, served.reader);
    expect(rest.status).to.equal(200);
    expect(rest.body).to.deep.equal(published);
    const again = await mutate(served.api, served.writer, 'publish', input.id);
    expect(again).to.deep.equal(published);
    expect((await getJson(served.api, `/v1/learning-opportunities/${input.id}`, served.reader)).text).to.equal(
      rest.text,
    );
  });

  it('archive turns PUBLISHED into ARCHIVED (gone from REST), archiving again changes nothing, publish brings it back', async () => {
    const input = buildLearningOpportunityInput();
    await mutate(served.api, served.writer, 'upsert', input);
    const published = await mutate(served.api, served.writer, 'publish', input.id);
    const archived = await mutate(served.api, served.writer, 'archive', input.id);
    expect(archived.status).to.equal('ARCHIVED');
    expect(archived.updatedAt > published.updatedAt).to.equal(true);
    expect((await getJson(served.api, `/v1/learning-opportunities/${input.id}`, served.reader)).status).to.equal(404);
    expect(await mutate(served.api, served.writer, 'archive', input.id)).to.deep.equal(archived);
    const republished = await mutate(served.api, served.writer, 'publish', input.id);
    expect(republished.status).to.equal('PUBLISHED');
    expect(republished.updatedAt > archived.updatedAt).to.equal(true);
    expect((await getJson(served.api, `/v1/learning-opportunities/${input.id}`, served.reader)).body).to.deep.equal(
      republished,
    );
  });

  it('archiving a draft is INVALID_STATE_TRANSITION and leaves it a draft', async () => {
    const input = buildLearningOpportunityInput();
    const draft = await mutate(served.api, served.writer, 'upsert', input);
    const res = await graphql(served.api, served.writer, ARCHIVE, { id: input.id });
    const error = onlyError(res);
    expect(error.extensions?.code).to.equal('INVALID_STATE_TRANSITION');
    expect(res.status, 'HTTP status (docs/graphql.md: a resolver error, not a 409 problem)').to.equal(200);
    expect(res.body.data).to.equal(null);
    const read = await graphql<{ learningOpportunity: unknown }>(served.api, served.reader, GET_ONE, { id: input.id });
    expect(read.body.data?.learningOpportunity).to.deep.equal(draft);
  });

  it('editing an archived record keeps it ARCHIVED and invisible', async () => {
    const input = buildLearningOpportunityInput();
    await mutate(served.api, served.writer, 'upsert', input);
    await mutate(served.api, served.writer, 'publish', input.id);
    await mutate(served.api, served.writer, 'archive', input.id);
    const edited = await mutate(served.api, served.writer, 'upsert', { ...input, title: 'Edited while archived' });
    expect(edited).to.include({ status: 'ARCHIVED', title: 'Edited while archived' });
    expect((await getJson(served.api, `/v1/learning-opportunities/${input.id}`, served.reader)).status).to.equal(404);
  });

  for (const start of ['DRAFT', 'PUBLISHED', 'ARCHIVED'] as const) {
    it(`delete removes a ${start} record and its nested rows; afterwards it is NOT_FOUND`, async () => {
      const input = buildLearningOpportunityInput();
      await mutate(served.api, served.writer, 'upsert', input);
      if (start !== 'DRAFT') await mutate(served.api, served.writer, 'publish', input.id);
      if (start === 'ARCHIVED') await mutate(served.api, served.writer, 'archive', input.id);
      const last = await mutate(served.api, served.writer, 'delete', input.id);
      expect(last).to.include({ id: input.id, status: start });
      for (const table of [
        'learning_opportunity',
        'lo_session',
        'lo_deadline',
        'lo_faq',
        'lo_external_review',
        'lo_accolade',
      ]) {
        expect(await rowCount(table, input.id), table).to.equal(0);
      }
      const read = await graphql(served.api, served.reader, GET_ONE, { id: input.id });
      expect(read.body).to.deep.equal({ data: { learningOpportunity: null } });
      expect((await getJson(served.api, `/v1/learning-opportunities/${input.id}`, served.reader)).status).to.equal(404);
      for (const document of Object.values(MUTATIONS)) {
        expect(
          onlyError(await graphql(served.api, served.writer, document, { id: input.id })).extensions?.code,
        ).to.equal('NOT_FOUND');
      }
    });
  }

  it('a deleted id can be created again, as a fresh draft', async () => {
    const input = buildLearningOpportunityInput();
    await mutate(served.api, served.writer, 'upsert', input);
    await mutate(served.api, served.writer, 'publish', input.id);
    await mutate(served.api, served.writer, 'delete', input.id);
    const again = await mutate(served.api, served.writer, 'upsert', input);
    expect(again).to.include({ status: 'DRAFT', publishedAt: null });
  });

  it('publish, archive and delete of an unknown id are NOT_FOUND; a malformed id is BAD_USER_INPUT', async () => {
    for (const [name, document] of Object.entries(MUTATIONS)) {
      const unknown = onlyError(await graphql(served.api, served.writer, document, { id: randomUUID() }));
      expect(unknown.extensions?.code, name).to.equal('NOT_FOUND');
      const malformed = onlyError(await graphql(served.api, served.writer, document, { id: 'nope' }));
      expect(malformed.extensions?.code, name).to.equal('BAD_USER_INPUT');
      expect(malformed.extensions?.invalidParams, name).to.deep.equal([{ name: 'id', reason: 'must be a UUID' }]);
    }
  });

  it('needs catalog:write for every mutation (FORBIDDEN otherwise) and writes nothing without it', async () => {
    const input = buildLearningOpportunityInput();
    const readOnly = await createTestKey(['catalog:read', 'graphql:read']);
    const denied = onlyError(await graphql(served.api, readOnly, UPSERT, { input }));
    expect(denied.extensions?.code).to.equal('FORBIDDEN');
    expect(denied.message).to.include('catalog:write');
    expect(await rowCount('learning_opportunity', input.id)).to.equal(0);
    await mutate(served.api, served.writer, 'upsert', input);
    for (const document of Object.values(MUTATIONS)) {
      expect(onlyError(await graphql(served.api, readOnly, document, { id: input.id })).extensions?.code).to.equal(
        'FORBIDDEN',
      );
    }
    expect(await rowCount('learning_opportunity', input.id)).to.equal(1);
    const anonymous = await graphql(served.api, null, UPSERT, { input: buildLearningOpportunityInput() });
    expect(anonymous.status).to.equal(401);
    expect(onlyError(anonymous).extensions?.code).to.equal('UNAUTHENTICATED');
  });
  it('refuses a request with two mutation fields before either runs: one could commit while the other nulls the answer', async () => {
    const input = buildLearningOpportunityInput();
    await mutate(served.api, served.writer, 'upsert', input);
    const missing = randomUUID();
    const documents = [
      `mutation { a: publishLearningOpportunity(id: "${input.id}") { id } b: archiveLearningOpportunity(id: "${missing}") { id } }`,
      // The same through a fragment, and with __typename beside (which is no mutation).
      `mutation { __typename ...Both } fragment Both on Mutation { a: publishLearningOpportunity(id: "${input.id}") { id } b: deleteLearningOpportunity(id: "${missing}") { id } }`,
    ];
    for (const document of documents) {
      const refused = await graphql(served.api, served.writer, document);
      expect(refused.status, document).to.equal(400);
      expect(refused.body.data, document).to.equal(undefined);
      expect(onlyError(refused).extensions?.code).to.equal('GRAPHQL_VALIDATION_FAILED');
      expect(refused.body.errors![0]!.message).to.match(/carries one mutation, and this one has 2 \(a, b\)/);
    }
    // Nothing ran: the record is still a draft, with no event.
    const { rows } = await testDb().pool.query<{ status: string; events: number }>(
      `select status, (select count(*)::int from event where resource_id = $1) as events from learning_opportunity where id = $1`,
      [input.id],
    );
    expect(rows[0]).to.deep.equal({ status: 'DRAFT', events: 0 });
    // One mutation alone (and __typename beside it) still runs.
    const one = await graphql<{ publishLearningOpportunity: { status: string } }>(
      served.api,
      served.writer,
      `mutation { __typename publishLearningOpportunity(id: "${input.id}") { status } }`,
    );
    expect(one.body.data?.publishLearningOpportunity.status).to.equal('PUBLISHED');
  });
});
