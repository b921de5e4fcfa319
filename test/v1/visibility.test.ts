// Only PUBLISHED records are visible over REST: drafts, archived, deleted and unknown ids are 404,
// the list leaves them out, and totalCount moves by exactly one on each publish, archive and delete.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { getJson, useTestApi } from '../support/api.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { buildLearningOpportunityInput, createRecord } from '../support/factories.ts';
import { expectInvalidParams, expectProblem } from '../support/problem.ts';

type ListBody = { results: { id: string }[]; pagination: { totalCount: number } };

describe('GET /v1 shows only PUBLISHED records', () => {
  const served = useTestApi(['catalog:read']);
  const getOne = (id: string) => getJson(served.api, `/v1/learning-opportunities/${id}`, served.key);
  const totalCount = async () =>
    ((await getJson(served.api, '/v1/learning-opportunities?limit=1', served.key)).body as ListBody).pagination
      .totalCount;
  const listedIds = async () => {
    const ids: string[] = [];
    for (let offset = 0; ; offset += 100) {
      const body = (await getJson(served.api, `/v1/learning-opportunities?limit=100&offset=${offset}`, served.key))
        .body as ListBody;
      ids.push(...body.results.map((r) => r.id));
      if (offset + 100 >= body.pagination.totalCount) return ids;
    }
  };

  it('is 404 problem+json for a draft, an archived, a deleted and an unknown id', async () => {
    const draft = await createRecord(served.api.writes, {}, { publish: false });
    const archived = await createRecord(served.api.writes);
    await served.api.writes.archive(archived.id);
    const deleted = await createRecord(served.api.writes);
    await served.api.writes.delete(deleted.id);
    for (const id of [draft.id, archived.id, deleted.id, randomUUID()]) {
      const problem = expectProblem(await getOne(id), 404);
      expect(problem.type).to.equal('/problems/not-found');
      expect(problem.instance).to.equal(`/v1/learning-opportunities/${id}`);
    }
  });

  const VALID = '6e868150-3e7a-4992-8ce9-c6b12b414759';
  for (const id of [
    'not-a-uuid',
    '12345',
    `${VALID}x`,
    VALID.replaceAll('-', ''),
    `{${VALID}}`,
    `${VALID.slice(0, -1)}g`,
  ]) {
    it(`is 400 naming id for the malformed id ${id}`, async () => {
      expectInvalidParams(await getOne(encodeURIComponent(id)), ['id']);
    });
  }

  it('finds a published record by its id in upper case too', async () => {
    const record = await createRecord(served.api.writes);
    const res = await getOne(record.id.toUpperCase());
    expect(res.status).to.equal(200);
    expect((res.body as { id: string }).id).to.equal(record.id);
  });

  it('moves totalCount by exactly one on publish, archive, re-publish and delete, and lists accordingly', async () => {
    const start = await totalCount();
    const record = await createRecord(served.api.writes, {}, { publish: false });
    expect(await totalCount(), 'a draft does not count').to.equal(start);
    expect(await listedIds()).not.to.include(record.id);

    await served.api.writes.publish(record.id);
    expect(await totalCount(), 'published').to.equal(start + 1);
    expect(await listedIds()).to.include(record.id);
    expect((await getOne(record.id)).status).to.equal(200);

    await served.api.writes.publish(record.id);
    expect(await totalCount(), 'publishing twice counts once').to.equal(start + 1);

    await served.api.writes.archive(record.id);
    expect(await totalCount(), 'archived').to.equal(start);
    expect(await listedIds()).not.to.include(record.id);
    expect((await getOne(record.id)).status).to.equal(404);

    await served.api.writes.publish(record.id);
    expect(await totalCount(), 'published again').to.equal(start + 1);
    expect((await getOne(record.id)).status).to.equal(200);

    await served.api.writes.delete(record.id);
    expect(await totalCount(), 'deleted').to.equal(start);
    expect(await listedIds()).not.to.include(record.id);
    expect((await getOne(record.id)).status).to.equal(404);
  });

  it('does not count a deleted draft or a deleted archived record', async () => {
    const start = await totalCount();
    const draft = await createRecord(served.api.writes, {}, { publish: false });
    const archived = await createRecord(served.api.writes);
    await served.api.writes.archive(archived.id);
    await served.api.writes.delete(draft.id);
    await served.api.writes.delete(archived.id);
    expect(await totalCount()).to.equal(start);
  });

  it('keeps a published record visible while its content is edited', async () => {
    const record = await createRecord(served.api.writes, { title: 'Before' });
    const start = await totalCount();
    await served.api.writes.upsert(
      parseLearningOpportunityInput(buildLearningOpportunityInput({ id: record.id, title: 'After' })),
    );
    expect(await totalCount()).to.equal(start);
    const res = await getOne(record.id);
    expect(res.body).to.include({ title: 'After', status: 'PUBLISHED' });
  });
});
