// bench:writes's baseline for seed: the same rendered documents (seed.ts renderedBatches, same
// options) inserted into one plain table (id, doc) with nothing else: no nested rows, no indexes
// but the key, no triggers. Same batches, sessions and session settings as seed, rendering included,
// so seed's records/s against this one is what the catalog's tables, indexes and triggers cost.
import type { Pool, PoolClient } from 'pg';
import { prepareSeedSession, renderedBatches, type SeedOptions } from '../../src/catalog/seed.ts';

export async function bareInsert(pool: Pool, options: SeedOptions & { connections: number }): Promise<void> {
  await pool.query('create table if not exists bench_bare_doc (id uuid primary key, doc text not null)');
  await pool.query('truncate bench_bare_doc');
  const batches = renderedBatches(options);
  const insert = async (client: PoolClient) => {
    await prepareSeedSession(client);
    for (let next = batches.next(); !next.done; next = batches.next())
      await client.query(
        `insert into bench_bare_doc (id, doc) select (d::json->>'id')::uuid, d from unnest($1::text[]) d on conflict do nothing`,
        [next.value],
      );
  };
  await Promise.all(
    Array.from({ length: options.connections }, async () => {
      const client = await pool.connect();
      try {
        await insert(client);
      } finally {
        client.release(true);
      }
    }),
  );
}
