// The read path, in plain SQL on MikroORM's pool: records are served as the bytes stored by the
// writes (no hydration), a page is one query, and totalCount is a primary-key read of
// catalog_count, never a count(*) over the table.
import type { Pool } from 'pg';

export type Page = { totalCount: number; limit: number; offset: number; results: string };
export type Visibility = 'public' | 'internal';

const PAGE_SQL = {
  // Matches the partial index learning_opportunity_published_order.
  public: `
    select (select n from catalog_count where status = 'PUBLISHED') as total,
           (select coalesce(string_agg(doc, ',' order by updated_at desc, id desc), '')
              from (select doc, updated_at, id from learning_opportunity
                     where status = 'PUBLISHED'
                     order by updated_at desc, id desc limit $1 offset $2) p) as docs`,
  // Matches learning_opportunity_order.
  internal: `
    select (select sum(n) from catalog_count) as total,
           (select coalesce(string_agg(doc, ',' order by updated_at desc, id desc), '')
              from (select doc, updated_at, id from learning_opportunity
                     order by updated_at desc, id desc limit $1 offset $2) p) as docs`,
} as const;

const ONE_SQL = {
  public: `select doc from learning_opportunity where id = $1 and status = 'PUBLISHED'`,
  internal: `select doc from learning_opportunity where id = $1`,
} as const;

export type CatalogReads = ReturnType<typeof createCatalogReads>;

export function createCatalogReads(pool: Pool) {
  return {
    /** The stored JSON of one record, or null when it is not visible. */
    async getOne(id: string, visibility: Visibility): Promise<string | null> {
      const { rows } = await pool.query<{ doc: string }>({ name: `lo-one-${visibility}`, text: ONE_SQL[visibility], values: [id] });
      return rows[0]?.doc ?? null;
    },

    /** One page in list order; `results` is the comma-joined JSON of the records. */
    async getPage(limit: number, offset: number, visibility: Visibility): Promise<Page> {
      const { rows } = await pool.query<{ total: string; docs: string }>({ name: `lo-page-${visibility}`, text: PAGE_SQL[visibility], values: [limit, offset] });
      const row = rows[0];
      return { totalCount: Number(row?.total ?? 0), limit, offset, results: row?.docs ?? '' };
    },
  };
}

/** The list response body, assembled around the stored record bytes. */
export function renderPage(page: Page): string {
  return `{"results":[${page.results}],"pagination":{"totalCount":${page.totalCount},"limit":${page.limit},"offset":${page.offset}}}`;
}
