// What the tests of the folded search tables (the bitmaps, the facet pairs) share: how many records
// are marked, a seeded and folded catalog to write to, and the check across a full rebuild.
import type { Pool } from 'pg';
import { expect } from 'chai';
import { foldSearch, foldSearchAll } from '../../src/catalog/count-folder.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';

/** Records written since their fold (search_dirty's rows). */
export async function markedRecords(pool: Pool): Promise<number> {
  return Number((await pool.query<{ n: string }>('select count(*) as n from search_dirty')).rows[0]!.n);
}

/** Seeds `count` records (`seed`), folds them all, and returns the first `take` published ids. */
export async function seededAndFolded(pool: Pool, count: number, seed: number, take: number): Promise<string[]> {
  await seedCatalog(pool, { count, seed, batchSize: 400 });
  await foldSearchAll(pool);
  const ids = (
    await pool.query<{ id: string }>(
      `select id from learning_opportunity where status = 'PUBLISHED' order by id limit $1`,
      [take],
    )
  ).rows.map((r) => r.id);
  expect(ids).to.have.length(take);
  return ids;
}

/**
 * Everything marked, as after a seed or the migration: more than marked_max, so the reads count their
 * matches' rows (`check(false)`: the folded tables answer nothing); one rebuild, then `check()` again.
 */
export async function checkAcrossRebuild(pool: Pool, check: (answered?: boolean) => Promise<void>): Promise<void> {
  await pool.query('update search_config set marked_max = 1000');
  await pool.query('select mark_search_all()');
  await check(false);
  expect(await foldSearch(pool)).to.be.greaterThan(1000);
  expect(await markedRecords(pool)).to.equal(0);
  await pool.query('update search_config set marked_max = 20000');
  await check();
}
