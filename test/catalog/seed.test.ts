// seed is idempotent for a given --seed: the same seed generates the same ids, and a second run
// inserts nothing (before, it failed on a duplicate key), while another seed adds its own records.
import { expect } from 'chai';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { testDb } from '../hooks.ts';

const published = async () => Number((await testDb().pool.query<{ n: string }>(`select n from catalog_count where status = 'PUBLISHED'`)).rows[0]!.n);

describe('seed', () => {
  it('inserts nothing on a second run with the same seed, and only what is missing after a smaller run', async () => {
    const seed = 1 + Math.floor(Math.random() * 1e8);
    const before = await published();
    expect(await seedCatalog(testDb().pool, { count: 30, seed, batchSize: 7 })).to.deep.equal({ inserted: 30, skipped: 0 });
    expect(await seedCatalog(testDb().pool, { count: 30, seed, batchSize: 7 })).to.deep.equal({ inserted: 0, skipped: 30 });
    expect(await seedCatalog(testDb().pool, { count: 45, seed, batchSize: 10 })).to.deep.equal({ inserted: 15, skipped: 30 });
    expect(await published()).to.equal(before + 45);
  });
});
