// The read path, in plain SQL on MikroORM's pool: records are served as the bytes stored by the
// writes (no hydration), a page is one query, and totalCount is a primary-key read of
// catalog_count, never a count(*) over the table.
import { cancelledWith } from '../db/deadline-reads.ts';
import type { CancellableReads } from '../db/queryable.ts';
import { PAGE_MAX_BYTES_DEFAULT } from '../kernel/paging.ts';
import type { QueryConfig } from 'pg';
import type { VersionCache } from './version-cache.ts';

export type Page = { totalCount: number; limit: number; offset: number; results: string };
export type Visibility = 'public' | 'internal';

// Exported for bench/read-path's bare baseline, so that it runs exactly the same statements.
export const PAGE_SQL = {
  // The plain page query with a lower bound: the first $1 records at or after the key at position
  // $2. That key comes from list_page_start, which reads the range counts of list_bucket (migration
  // list_buckets) to find the range holding position $2, and an index-only scan that skips inside
  // that one range (normally under 1,024 keys). However deep the page, it costs what the first page
  // costs plus a fraction of a millisecond. Past the end there is no such key, and no rows.
  // $3: the entity tags the client holds (If-None-Match); when the page's own is among them, the
  // docs are left out of the answer (a 304 needs only the tag). The tag is a digest of totalCount,
  // limit, offset and the page's record digests in order: it changes with any byte of the page.
  // $4: the page's byte budget (PAGE_MAX_BYTES less the envelope): the page stops before the record
  // that would pass it, but always holds its first record; `n` says how many it holds. The running
  // sum is over the at most $1 rows already read (octet_length of a stored doc reads its length
  // only), so the budget costs no more rows or plan.
  public: `
    select c.total, p.etag, case when p.etag = any($3::text[]) then null else p.docs end as docs, octet_length(p.docs) as docs_bytes, p.n
      from (select n as total from catalog_count where status = 'PUBLISHED') c
      cross join lateral (
        select md5(concat_ws(':', c.total, $1, $2, string_agg(doc_digest, ',' order by updated_at desc, id desc))) as etag,
               coalesce(string_agg(doc, ',' order by updated_at desc, id desc), '') as docs, count(*)::int as n
          from (select doc, doc_digest, updated_at, id, row_number() over w as rn, sum(octet_length(doc) + 1) over w as upto
                  from (select doc, doc_digest, updated_at, id from learning_opportunity
                         where status = 'PUBLISHED'
                           and (updated_at, id) <= (select k.updated_at, k.id
                                                      from list_page_start($2) s
                                                      cross join lateral (select updated_at, id from learning_opportunity
                                                                           where status = 'PUBLISHED' and (updated_at, id) < (s.start_at, s.start_id)
                                                                           order by updated_at desc, id desc offset s.skip limit 1) k)
                         order by updated_at desc, id desc limit $1) l
                window w as (order by updated_at desc, id desc rows unbounded preceding)) p
         where p.rn = 1 or p.upto <= $4) p`,
  // Internal readers (GraphQL, every status): the same lower bound from the counts of every record
  // (list_page_start_all, migration list_bucket_all_statuses), keys read index-only and then each
  // doc by primary key, so a deep page costs what the first one does.
  internal: `
    select (select sum(n) from catalog_count) as total,
           (select coalesce(string_agg((select d.doc from learning_opportunity d where d.id = k.id), ',' order by k.updated_at desc, k.id desc), '')
              from (select id, updated_at from learning_opportunity
                     where (updated_at, id) <= (select x.updated_at, x.id
                                                  from list_page_start_all($2) s
                                                  cross join lateral (select updated_at, id from learning_opportunity
                                                                       where (updated_at, id) < (s.start_at, s.start_id)
                                                                       order by updated_at desc, id desc offset s.skip limit 1) x)
                     order by updated_at desc, id desc limit $1) k) as docs`,
} as const;

export const ONE_SQL = {
  // $2: the entity tags the client holds (If-None-Match); when the record's is among them, the doc
  // is left out of the answer (a 304 needs only the tag).
  // doc_bytes: the doc's length in UTF-8 (Content-Length without counting the text again in Node).
  public: `select doc_digest as etag, case when doc_digest = any($2::text[]) then null else doc end as doc, octet_length(doc) as doc_bytes
             from learning_opportunity where id = $1 and status = 'PUBLISHED'`,
  internal: `select doc from learning_opportunity where id = $1`,
} as const;

export type CatalogReads = ReturnType<typeof createCatalogReads>;

/** An internal page: the total and the records' comma-joined JSON. */
export type PageRow = { total: string; docs: string | null };
/** A public page: `docs` is null when the client holds `etag` already; `docs_bytes` is its UTF-8 length; `n` its records. */
export type PublicPageRow = PageRow & { etag: string; docs_bytes: number; n: number };
/** `doc` is null when the client holds `etag` already; `doc_bytes` is its UTF-8 length. */
export type OneRow = { etag: string; doc: string | null; doc_bytes: number };
/** Entity tags the client holds (If-None-Match values, without quotes), or null. */
export type HeldTags = string[] | null;

// The public statements take the tags the client holds as their last parameter.
const oneStatement = (id: string, visibility: Visibility, held: HeldTags = null): QueryConfig => ({
  name: `lo-one-${visibility}`,
  text: ONE_SQL[visibility],
  values: visibility === 'public' ? [id, held] : [id],
});
const pageStatement = (
  limit: number,
  offset: number,
  visibility: Visibility,
  held: HeldTags = null,
  maxBytes = PAGE_MAX_BYTES_DEFAULT,
): QueryConfig => ({
  name: `lo-page-${visibility}`,
  text: PAGE_SQL[visibility],
  values: visibility === 'public' ? [limit, offset, held, pageBudget(maxBytes)] : [limit, offset],
});
export const pageOf = (row: PageRow | undefined, limit: number, offset: number): Page => ({
  totalCount: Number(row?.total ?? 0),
  limit,
  offset,
  results: row?.docs ?? '',
});

// PAGE_MAX_BYTES when unset: declared in kernel/paging.ts, below the settings that default to it;
// the page readers (list-query.ts, feed/, http/v1/calendar.ts) take it from here.
export { PAGE_MAX_BYTES_DEFAULT };
/** What a page's records may take of PAGE_MAX_BYTES: the rest is the envelope (pagination; at most a few hundred bytes). */
export const pageBudget = (maxBytes: number): number => maxBytes - 1024;

/**
 * `versions`: the process's record version cache, for 304s without a round trip (null: none);
 * `pageMaxBytes`: PAGE_MAX_BYTES, the bound of a REST list page's bytes.
 */
export function createCatalogReads(
  pool: CancellableReads,
  versions: VersionCache | null = null,
  pageMaxBytes = PAGE_MAX_BYTES_DEFAULT,
) {
  return {
    /** The stored JSON of one record, or null when it is not visible; `signal` as for `conditional`. */
    async getOne(id: string, visibility: Visibility, signal?: AbortSignal): Promise<string | null> {
      const { rows } = await cancelledWith(pool, signal).query<{ doc: string }>(oneStatement(id, visibility));
      return rows[0]?.doc ?? null;
    },

    /** One page in list order; `results` is the comma-joined JSON of the records; `signal` as for `conditional`. */
    async getPage(limit: number, offset: number, visibility: Visibility, signal?: AbortSignal): Promise<Page> {
      const statement = pageStatement(limit, offset, visibility, null, pageMaxBytes);
      const { rows } = await cancelledWith(pool, signal).query<PageRow>(statement);
      return pageOf(rows[0], limit, offset);
    },

    /**
     * The reads of /v1, with the entity tags of the client's If-None-Match (`held`): the record
     * (undefined when it is not visible) or the page, without the bytes when the client holds them.
     * `signal`: the request's, which cancels the statement when its client goes away.
     */
    conditional: {
      /** `held` '*' (If-None-Match: *): any version the client holds; a record the cache knows is answered from memory. */
      async getOne(id: string, held: HeldTags | '*', signal?: AbortSignal): Promise<OneRow | undefined> {
        const known = versions?.get(id);
        if (known !== undefined && (held === '*' || held?.includes(known)))
          return { etag: known, doc: null, doc_bytes: 0 };
        const mark = versions?.mark() ?? 0;
        const statement = oneStatement(id, 'public', held === '*' ? null : held);
        const row = (await cancelledWith(pool, signal).query<OneRow>(statement)).rows[0];
        if (row) versions?.keep(id, row.etag, mark);
        return row;
      },
      async getPage(limit: number, offset: number, held: HeldTags, signal?: AbortSignal): Promise<PublicPageRow> {
        const statement = pageStatement(limit, offset, 'public', held, pageMaxBytes);
        const row = (await cancelledWith(pool, signal).query<PublicPageRow>(statement)).rows[0];
        if (!row) throw new Error('page statement returned no row'); // catalog_count always has the PUBLISHED row
        return row;
      },
    },
  };
}

/**
 * The list response body, assembled around the stored record bytes; `count`: how many records
 * `results` holds. `next`: the offset that follows this page (offset + count); `hasMore`: records
 * follow it. A page holds fewer than `limit` records before the end when its bytes reached
 * PAGE_MAX_BYTES: clients continue from `next`.
 */
export function renderPage(page: Page, count: number): string {
  const next = page.offset + count;
  return `{"results":[${page.results}],"pagination":{"totalCount":${page.totalCount},"limit":${page.limit},"offset":${page.offset},"next":${next},"hasMore":${next < page.totalCount}}}`;
}

/** The UTF-8 length of renderPage's body, given the UTF-8 length of `results`: the rest is ASCII. */
export const renderedPageBytes = (body: string, page: Page, resultsBytes: number): number =>
  body.length - page.results.length + resultsBytes;
