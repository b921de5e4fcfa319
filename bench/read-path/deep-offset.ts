// The database side of deep pages: the plain OFFSET statement the service used before list_bucket,
// against the current one, at the first and the last page (median time in the database client).
import type { Pool } from 'pg';
import { PAGE_MAX_BYTES_DEFAULT, PAGE_SQL, pageBudget } from '../../src/catalog/read-model.ts';
import { median } from './http-client.ts';

const PLAIN_OFFSET_SQL = `
  select (select n from catalog_count where status = 'PUBLISHED') as total,
         (select coalesce(string_agg(doc, ',' order by updated_at desc, id desc), '')
            from (select doc, updated_at, id from learning_opportunity
                   where status = 'PUBLISHED'
                   order by updated_at desc, id desc limit $1 offset $2) p) as docs`;

export type DeepOffset = {
  lastOffset: number;
  plain: { firstMs: number; lastMs: number };
  ranges: { firstMs: number; lastMs: number };
};

// `held`: the public page statement's last parameters (the If-None-Match tags, none here; the page's byte budget).
async function timeStatement(
  pool: Pool,
  name: string,
  text: string,
  held: [] | [null, number],
  offset: number,
  samples: number,
): Promise<number> {
  const times: number[] = [];
  for (let i = -2; i < samples; i++) {
    const started = performance.now();
    const { rows } = await pool.query<{ docs: string }>({ name, text, values: [100, offset, ...held] });
    if (!rows[0]?.docs) throw new Error(`deep-offset: empty page at offset ${offset}`);
    if (i >= 0) times.push(performance.now() - started);
  }
  return median(times);
}

export async function measureDeepOffset(pool: Pool, records: number, samples: number): Promise<DeepOffset> {
  const lastOffset = Math.floor((records - 1) / 100) * 100;
  const run = async (name: string, text: string, held: [] | [null, number]) => ({
    firstMs: await timeStatement(pool, name, text, held, 0, samples),
    lastMs: await timeStatement(pool, name, text, held, lastOffset, samples),
  });
  return {
    lastOffset,
    plain: await run('bench-plain-offset', PLAIN_OFFSET_SQL, []),
    ranges: await run('bench-ranges', PAGE_SQL.public, [null, pageBudget(PAGE_MAX_BYTES_DEFAULT)]),
  };
}
