// List order: updatedAt desc, ties by id desc, so that a full walk at a small page size visits every
// published record exactly once. Ties are made by writing through a catalog whose clock stands
// still, so every stored record stays exactly what the renderer produced.
import { expect } from 'chai';
import { createCatalogWrites } from '../../src/catalog/catalog-writes.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { createChangeRecorder } from '../../src/events/record-change.ts';
import { testDb } from '../hooks.ts';
import { getJson, useTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput, resetCatalog } from '../support/factories.ts';

type Item = { id: string; updatedAt: string; status: string };
type ListBody = { results: Item[]; pagination: { totalCount: number; limit: number; offset: number } };

/** Server order: updatedAt desc, then id desc (uuid order is the order of its lowercase hex). */
const listOrder = (a: Item, b: Item) =>
  a.updatedAt === b.updatedAt ? (a.id < b.id ? 1 : a.id > b.id ? -1 : 0) : a.updatedAt < b.updatedAt ? 1 : -1;

describe('GET /v1/learning-opportunities order and full walk', () => {
  const served = useTestApi(['catalog:read']);
  let expected: Item[];

  before(async function () {
    this.timeout(30_000);
    await resetCatalog();
    let now = new Date('2030-01-01T00:00:00.000Z');
    const writes = createCatalogWrites({
      orm: testDb().orm,
      recordChange: createChangeRecorder(null),
      clock: () => now,
    });
    // Groups of 1, 4, 2, 5 and 1 records with equal updatedAt, plus a draft and an archived one
    // inside a tie group that must be skipped.
    for (const size of [1, 4, 2, 5, 1]) {
      now = new Date(now.getTime() + 60_000);
      for (let i = 0; i < size; i++) {
        const input = parseLearningOpportunityInput(buildLearningOpportunityInput());
        await writes.upsert(input);
        await writes.publish(input.id);
      }
      await writes.upsert(parseLearningOpportunityInput(buildLearningOpportunityInput()));
    }
    const archived = parseLearningOpportunityInput(buildLearningOpportunityInput());
    await writes.upsert(archived);
    await writes.publish(archived.id);
    await writes.archive(archived.id);
    const { rows } = await testDb().pool.query<{ doc: string }>(
      `select doc from learning_opportunity where status = 'PUBLISHED'`,
    );
    expected = rows.map((r) => JSON.parse(r.doc) as Item).sort(listOrder);
  });
  after(() => resetCatalog()); // its records are dated 2030: later files expect their own to be newest

  it('really has ties in updatedAt (the fixture is what the test claims)', () => {
    expect(expected).to.have.length(13);
    expect(new Set(expected.map((r) => r.updatedAt)).size).to.equal(5);
  });

  it('lists by updatedAt descending, ties by id descending', async () => {
    const res = await getJson(served.api, '/v1/learning-opportunities?limit=100', served.key);
    const body = res.body as ListBody;
    expect(body.pagination.totalCount).to.equal(13);
    expect(body.results.map((r) => r.id)).to.deep.equal(expected.map((r) => r.id));
  });

  for (const limit of [1, 3, 4]) {
    it(`a full walk at limit=${limit} visits every published record exactly once, in order`, async () => {
      const seen: string[] = [];
      for (let offset = 0; ; offset += limit) {
        const res = await getJson(served.api, `/v1/learning-opportunities?limit=${limit}&offset=${offset}`, served.key);
        expect(res.status).to.equal(200);
        const body = res.body as ListBody;
        expect(body.pagination).to.deep.equal({
          totalCount: 13,
          limit,
          offset,
          next: Math.min(offset + limit, 13),
          hasMore: offset + limit < 13,
        });
        expect(body.results.length).to.be.at.most(limit);
        seen.push(...body.results.map((r) => r.id));
        if (offset + limit >= body.pagination.totalCount) break;
      }
      expect(new Set(seen).size).to.equal(seen.length);
      expect(seen).to.deep.equal(expected.map((r) => r.id));
    });
  }

  it('serves the same bytes in the list as GET one, also for tied records', async () => {
    const res = await getJson(served.api, '/v1/learning-opportunities?limit=100', served.key);
    for (const item of expected) {
      const one = await getJson(served.api, `/v1/learning-opportunities/${item.id}`, served.key);
      expect(res.text).to.include(one.text);
    }
  });
});
