// Bulk writes for the content platform: upsertLearningOpportunities and
// publishLearningOpportunities take up to 500 records in one transaction, validate like the single
// mutations (problems named inputs[i]...), and emit the same events per record.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson, graphql, useTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput, type LearningOpportunityInput } from '../support/factories.ts';
import { onlyError, RECORD_FIELDS, type RecordJson } from '../support/graphql-documents.ts';

const UPSERT_MANY = `mutation ($inputs: [LearningOpportunityInput!]!) { upsertLearningOpportunities(inputs: $inputs) { ...Record } } ${RECORD_FIELDS}`;
const PUBLISH_MANY = `mutation ($ids: [ID!]!) { publishLearningOpportunities(ids: $ids) { ...Record } } ${RECORD_FIELDS}`;

async function eventsOf(ids: string[]): Promise<string[]> {
  const { rows } = await testDb().pool.query<{ type: string; resource_id: string }>(
    'select type, resource_id from event where resource_id = any($1::uuid[]) order by resource_id, occurred_at',
    [ids],
  );
  return rows.map((r) => `${r.resource_id} ${r.type}`);
}

describe('GraphQL bulk mutations', () => {
  const served = useTestApi({ writer: ['catalog:write', 'graphql:read'], reader: ['catalog:read'] });

  const upsertMany = (inputs: unknown[], key = served.writer) =>
    graphql<{ upsertLearningOpportunities: RecordJson[] }>(served.api, key, UPSERT_MANY, { inputs });
  const publishMany = (ids: string[], key = served.writer) =>
    graphql<{ publishLearningOpportunities: RecordJson[] }>(served.api, key, PUBLISH_MANY, { ids });

  it('creates drafts, publishes them and updates them in batches, with one event per changed record', async () => {
    const inputs = [0, 1, 2].map((n) => buildLearningOpportunityInput({ title: `Batch ${n}` }));
    const ids = inputs.map((i) => i.id);
    const created = await upsertMany(inputs);
    expect(created.body.errors).to.equal(undefined);
    expect(created.body.data!.upsertLearningOpportunities.map((r) => [r.id, r.status, r.title])).to.deep.equal(
      inputs.map((i) => [i.id, 'DRAFT', i.title]),
    );
    expect(await eventsOf(ids), 'drafts emit nothing').to.deep.equal([]);

    const published = await publishMany([ids[2]!, ids[0]!, ids[1]!]);
    expect(published.body.data!.publishLearningOpportunities.map((r) => [r.id, r.status])).to.deep.equal(
      [ids[2], ids[0], ids[1]].map((id) => [id, 'PUBLISHED']),
    );
    for (const record of published.body.data!.publishLearningOpportunities) {
      const rest = await getJson(served.api, `/v1/learning-opportunities/${record.id}`, served.reader);
      expect(rest.body, 'the same record over REST').to.deep.equal(record);
    }
    expect((await eventsOf(ids)).filter((e) => e.endsWith('PUBLISHED'))).to.have.length(3);

    // Publishing again and an identical save change nothing; one changed record is one UPDATED.
    await publishMany(ids);
    const edited: LearningOpportunityInput[] = [inputs[0]!, { ...inputs[1]!, title: 'Batch 1, edited' }, inputs[2]!];
    const updated = await upsertMany(edited);
    expect(updated.body.data!.upsertLearningOpportunities.map((r) => r.status)).to.deep.equal([
      'PUBLISHED',
      'PUBLISHED',
      'PUBLISHED',
    ]);
    const events = await eventsOf(ids);
    expect(events.filter((e) => e.endsWith('UPDATED'))).to.deep.equal([`${ids[1]} LEARNING_OPPORTUNITY_UPDATED`]);
    expect(events).to.have.length(4);
    const nested = await testDb().pool.query<{ n: number }>(
      'select count(*)::int as n from lo_session where learning_opportunity_id = $1',
      [ids[1]],
    );
    expect(nested.rows[0]!.n, 'replaced nested rows, not added ones').to.equal(
      (inputs[1]!.sessions as unknown[]).length,
    );
  });

  it('rejects a batch with any invalid input, naming each problem by its index, and writes nothing', async () => {
    const good = buildLearningOpportunityInput();
    const badSession = buildLearningOpportunityInput();
    (badSession.sessions as Record<string, unknown>[])[0]!.startsAt = '2027-03-01';
    const inputs = [
      good,
      buildLearningOpportunityInput(),
      buildLearningOpportunityInput(),
      badSession,
      { ...buildLearningOpportunityInput(), price: { amount: 'abc', currency: 'EUR' } },
    ];
    const error = onlyError(await upsertMany(inputs));
    expect(error.extensions?.code).to.equal('BAD_USER_INPUT');
    expect(error.extensions?.invalidParams?.map((p) => p.name)).to.deep.equal([
      'inputs[3].sessions[0].startsAt',
      'inputs[4].price.amount',
    ]);
    const { rows } = await testDb().pool.query('select 1 from learning_opportunity where id = $1', [good.id]);
    expect(rows, 'nothing written').to.have.length(0);
  });

  it('refuses more than 500 records and an id repeated within one call', async () => {
    const many = Array.from({ length: 501 }, () => buildLearningOpportunityInput());
    expect(onlyError(await upsertMany(many)).extensions?.invalidParams?.map((p) => p.name)).to.deep.equal(['inputs']);
    const twice = buildLearningOpportunityInput();
    expect(
      onlyError(await upsertMany([twice, buildLearningOpportunityInput(), { ...twice, title: 'Again' }])).extensions
        ?.invalidParams,
    ).to.deep.equal([{ name: 'inputs[2].id', reason: 'repeats inputs[0]' }]);
    const id = randomUUID();
    expect(onlyError(await publishMany([id, id])).extensions?.invalidParams?.map((p) => p.name)).to.deep.equal([
      'ids[1]',
    ]);
    expect(onlyError(await publishMany(['nope'])).extensions?.invalidParams?.map((p) => p.name)).to.deep.equal([
      'ids[0]',
    ]);
  });

  it('publishes all or none: an unknown id fails the call and publishes nothing', async () => {
    const inputs = [buildLearningOpportunityInput(), buildLearningOpportunityInput()];
    await upsertMany(inputs);
    const error = onlyError(await publishMany([inputs[0]!.id, randomUUID(), inputs[1]!.id]));
    expect(error.extensions?.code).to.equal('NOT_FOUND');
    expect(error.message).to.contain('ids[1]');
    const { rows } = await testDb().pool.query<{ status: string }>(
      'select status from learning_opportunity where id = any($1::uuid[])',
      [inputs.map((i) => i.id)],
    );
    expect(rows.map((r) => r.status)).to.deep.equal(['DRAFT', 'DRAFT']);
  });

  it('needs catalog:write', async () => {
    const input = buildLearningOpportunityInput();
    expect(onlyError(await upsertMany([input], served.reader)).extensions?.code).to.equal('FORBIDDEN');
    expect(onlyError(await publishMany([input.id], await createTestKey(['graphql:read']))).extensions?.code).to.equal(
      'FORBIDDEN',
    );
  });
});
