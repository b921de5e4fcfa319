// seed is idempotent for a given --seed: the same seed generates the same ids, and a second run
// inserts nothing (before, it failed on a duplicate key), while another seed adds its own records.
// The records a seed makes do not depend on how many sessions insert them, and seeding emits no
// events.
import { expect } from 'chai';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { testDb } from '../hooks.ts';
import { cli, json } from '../support/cli.ts';

const published = async () =>
  Number(
    (await testDb().pool.query<{ n: string }>(`select n from catalog_count where status = 'PUBLISHED'`)).rows[0]!.n,
  );
const events = async () =>
  Number((await testDb().pool.query<{ n: string }>('select count(*) as n from event')).rows[0]!.n);
const randomSeed = () => 1 + Math.floor(Math.random() * 1e8);

describe('seed', () => {
  it('inserts nothing on a second run with the same seed, and only what is missing after a smaller run', async () => {
    const seed = randomSeed();
    const before = await published();
    expect(await seedCatalog(testDb().pool, { count: 30, seed, batchSize: 7 })).to.deep.equal({
      inserted: 30,
      skipped: 0,
    });
    expect(await seedCatalog(testDb().pool, { count: 30, seed, batchSize: 7 })).to.deep.equal({
      inserted: 0,
      skipped: 30,
    });
    expect(await seedCatalog(testDb().pool, { count: 45, seed, batchSize: 10 })).to.deep.equal({
      inserted: 15,
      skipped: 30,
    });
    expect(await published()).to.equal(before + 45);
  });

  it('makes the same records on any number of sessions, and no events', async () => {
    const seed = randomSeed();
    const eventsBefore = await events();
    // Three sessions take the 9 batches in whatever order they finish; one session then finds them all.
    expect(await seedCatalog(testDb().pool, { count: 60, seed, batchSize: 7, connections: 3 })).to.deep.equal({
      inserted: 60,
      skipped: 0,
    });
    expect(await seedCatalog(testDb().pool, { count: 60, seed, batchSize: 60, connections: 1 })).to.deep.equal({
      inserted: 0,
      skipped: 60,
    });
    expect(await events()).to.equal(eventsBefore);
  });

  it('runs from the command line, and refuses a bad --connections with exit 2', async function () {
    this.timeout(120_000); // a Node process loading the ORM: seconds on a busy machine
    const before = await published();
    const run = await cli(
      'seed',
      '--count',
      '12',
      '--seed',
      String(randomSeed()),
      '--batch-size',
      '5',
      '--connections',
      '2',
      '--json',
    );
    expect(run.code, run.stderr).to.equal(0);
    expect(json<{ inserted: number; skipped: number }>(run.stdout)).to.deep.include({ inserted: 12, skipped: 0 });
    expect(await published()).to.equal(before + 12);

    const bad = await cli('seed', '--count', '12', '--connections', '0');
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.match(/--connections must be a positive integer/);
  });
});
