// Filtered, searched, re-sorted, projected and faceted lists (CONTRACT.md 13), in plain SQL on the
// read pool, for REST (http/list-parameters.ts) and GraphQL alike. One statement per page: the exact
// total, the page's records (the stored doc, or a projection of it cut out of the doc's own text: no
// record is re-rendered in Node) and the facet counts. The unfiltered list never comes here: it keeps
// its own fast path (read-model.ts). The indexes behind each condition: migration list_query.
import { createHash } from 'node:crypto';
import type { QueryConfig } from 'pg';
import type { Queryable } from '../db/read-replicas.ts';
import { RecordSchema } from './record-schema.ts';
import { PAGE_MAX_BYTES_DEFAULT, pageBudget, type Visibility } from './read-model.ts';

export const LIST_SORTS = ['-updatedAt', 'updatedAt', 'nextSessionStartsAt', 'relevance'] as const;
export const LIST_FACETS = ['format', 'language', 'topic', 'provider', 'country'] as const;
/** The record's top-level fields, in the order they are rendered (and projected). */
export const RECORD_FIELDS = Object.keys(RecordSchema.shape) as (keyof typeof RecordSchema.shape)[];
/** At most this many values in one comma-separated parameter (or GraphQL list). */
export const LIST_VALUES_MAX = 50;
/** Values per facet, most frequent first. */
export const FACET_TOP = 20;

export type ListSort = (typeof LIST_SORTS)[number];
export type ListFacet = (typeof LIST_FACETS)[number];
export type RecordField = (typeof RECORD_FIELDS)[number];

/** Every condition is optional; different conditions combine with AND, the values of one with OR. */
export type ListFilter = {
  updatedSince?: Date;
  updatedBefore?: Date;
  format?: string[];
  language?: string[];
  topic?: string[];
  provider?: string[];
  country?: string[];
  city?: string[];
  startsFrom?: Date;
  startsBefore?: Date;
  /** Internal readers only (GraphQL); the public list is PUBLISHED only. */
  status?: string[];
};

export type ListQuery = {
  filter: ListFilter;
  /** The search text, or null. */
  q: string | null;
  sort: ListSort;
  /** Fields to return (id and updatedAt are added), or null for whole records. */
  fields: RecordField[] | null;
  facets: ListFacet[];
};

export type FacetCounts = Partial<Record<ListFacet, { value: string; count: number }[]>>;
/** `count`: the records in `results` (fewer than `limit` when the page's byte bound stopped it early). */
export type ListPage = {
  totalCount: number;
  limit: number;
  offset: number;
  count: number;
  results: string;
  facets: FacetCounts | null;
  etag: string;
};

/** True when the query is the plain list (the unfiltered fast path answers it). */
export const isPlainList = (query: ListQuery): boolean =>
  Object.values(query.filter).every((v) => v === undefined) &&
  query.q === null &&
  query.sort === '-updatedAt' &&
  query.fields === null &&
  query.facets.length === 0;

/**
 * The tsquery text of a search: its words (letters and digits) quoted, joined with AND, the last one
 * also a prefix ("machine learn" finds "Machine Learning"). to_tsquery stems each word with the
 * 'english' configuration and drops stop words. Null when the text holds no word.
 */
export function searchQuery(text: string): string | null {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu);
  if (!words) return null;
  return words.map((w, i) => `'${w}'${i === words.length - 1 ? ':*' : ''}`).join(' & ');
}

const SORT_SQL: Record<ListSort, string> = {
  '-updatedAt': 'lo.updated_at desc, lo.id desc',
  updatedAt: 'lo.updated_at asc, lo.id desc',
  // Records without a session after now come last.
  nextSessionStartsAt: '', // its own statement (listStatement)
  relevance: 'ts_rank(lo.search, tsq.query) desc, lo.id desc',
};

// The projection of a doc: its members cut out of its own text (json, not jsonb, keeps each value's
// bytes and the members' order), in the record's order.
function projection(fields: RecordField[]): string {
  const wanted = new Set<RecordField>([...fields, 'id', 'updatedAt']);
  const members = RECORD_FIELDS.filter((f) => wanted.has(f)).map(
    (f, i) => `'${i ? ',' : ''}"${f}":' || (x.j->'${f}')::text`,
  );
  return `'{' || ${members.join(' || ')} || '}'`;
}

// Each facet over the matching records `m`: records per value (a record counts once per value).
const FACET_SQL: Record<ListFacet, string> = {
  format: 'select m.format as value, count(*) as n from m group by 1',
  language: 'select m.language as value, count(*) as n from m where m.language is not null group by 1',
  provider: 'select m.provider_name as value, count(*) as n from m where m.provider_name is not null group by 1',
  // Topics are read by id (primary key), for the matching records only (m holds what the indexes hold).
  topic: `select t.value, count(*) as n from m
            cross join lateral (select distinct value from jsonb_array_elements_text((select d.topics from learning_opportunity d where d.id = m.id))) t group by 1`,
  country: `select c.value, count(*) as n from m cross join lateral (select distinct s.country as value from lo_session s
              where s.learning_opportunity_id = m.id and s.country is not null) c group by 1`,
};

// Facets whose values a record holds one of (a sum over several values counts each record once).
const SINGLE_VALUED = new Set(['format', 'language', 'provider']);
const FACET_OF: Partial<Record<keyof ListFilter, string>> = {
  format: 'format',
  language: 'language',
  provider: 'provider',
  topic: 'topic',
  country: 'country',
  city: 'city',
};

/**
 * The exact total of the public catalog read from maintained counts, when the filter allows it
 * (else null: a count over the matches). One facet filter alone: facet_count (migration facet_count),
 * for any values of a single-valued facet, one value of topic, country or city. The updated_at
 * bounds alone: list_bucket's range counts (migration list_buckets) above each bound plus the rows
 * between the bound and the next range (at most one range's), checked against catalog_count as the
 * plain list's deep pages are (read-model.ts): if the ranges ever disagree, a plain count.
 */
function countedTotal(filter: ListFilter, param: (value: unknown, type: string) => string): string | null {
  const given = (Object.keys(filter) as (keyof ListFilter)[]).filter((name) => filter[name] !== undefined);
  if (given.length === 1 && FACET_OF[given[0]!]) {
    const name = given[0]!;
    const values = [...new Set(filter[name] as string[])];
    if (!SINGLE_VALUED.has(name) && values.length !== 1) return null;
    return `(select coalesce(sum(n), 0) from facet_count where facet = '${FACET_OF[name]}' and value = any(${param(values, 'text[]')}))`;
  }
  if (given.length && given.every((name) => name === 'updatedSince' || name === 'updatedBefore')) {
    // The lower bound of the first range at or after `bound` (scalars: a row constructor of them is an index condition).
    const next = (column: string, bound: string) =>
      `(select b.${column} from list_bucket b where b.lo_updated_at >= ${bound} order by b.lo_updated_at, b.lo_id limit 1)`;
    // Published records with updated_at >= bound (the redundant upper bound on updated_at alone lets
    // the planner see a short range: a parallel plan cost 30-40 ms of worker start here).
    const atOrAfter = (bound: string) => `((
        select coalesce(sum(b.n), 0) from list_bucket b where b.lo_updated_at >= ${bound})
      + (select count(*) from learning_opportunity lo where lo.status = 'PUBLISHED' and lo.updated_at >= ${bound}
           and lo.updated_at <= coalesce(${next('lo_updated_at', bound)}, 'infinity')
           and (lo.updated_at, lo.id) < (coalesce(${next('lo_updated_at', bound)}, 'infinity'), coalesce(${next('lo_id', bound)}, '00000000-0000-0000-0000-000000000000'))))`;
    const all = `(select n from catalog_count where status = 'PUBLISHED')`;
    const since = filter.updatedSince ? atOrAfter(param(filter.updatedSince, 'timestamptz')) : all;
    const before = filter.updatedBefore ? atOrAfter(param(filter.updatedBefore, 'timestamptz')) : '0';
    const exact = `(select count(*) from learning_opportunity lo where lo.status = 'PUBLISHED'${filter.updatedSince ? ` and lo.updated_at >= ${param(filter.updatedSince, 'timestamptz')}` : ''}${filter.updatedBefore ? ` and lo.updated_at < ${param(filter.updatedBefore, 'timestamptz')}` : ''})`;
    return `(select case when (select sum(n) from list_bucket) = ${all} then greatest(0, ${since} - ${before}) else ${exact} end)`;
  }
  return null;
}

/** The statement of one page. Values travel as parameters; only fixed SQL fragments are spliced. */
export function listStatement(
  query: ListQuery,
  limit: number,
  offset: number,
  visibility: Visibility,
  budget: number | null = null,
): QueryConfig {
  const values: unknown[] = [];
  const param = (value: unknown, type: string) => {
    values.push(value);
    return `$${values.length}::${type}`;
  };
  const { filter } = query;
  const where: string[] = [];
  const ctes: string[] = [];
  if (visibility === 'public') where.push(`lo.status = 'PUBLISHED'`);
  else if (filter.status) where.push(`lo.status = any(${param(filter.status, 'text[]')})`);
  if (filter.updatedSince) where.push(`lo.updated_at >= ${param(filter.updatedSince, 'timestamptz')}`);
  if (filter.updatedBefore) where.push(`lo.updated_at < ${param(filter.updatedBefore, 'timestamptz')}`);
  if (filter.format) where.push(`lo.format = any(${param(filter.format, 'text[]')})`);
  if (filter.language) where.push(`lo.language = any(${param(filter.language, 'text[]')})`);
  if (filter.provider) where.push(`lo.provider_name = any(${param(filter.provider, 'text[]')})`);
  if (filter.topic) where.push(`lo.topics ?| ${param(filter.topic, 'text[]')}`);
  const session = (condition: string) =>
    `lo.id in (select s.learning_opportunity_id from lo_session s where ${condition})`;
  if (filter.country) where.push(session(`s.country = any(${param(filter.country, 'text[]')})`));
  if (filter.city) where.push(session(`s.city = any(${param(filter.city, 'text[]')})`));
  if (filter.startsFrom || filter.startsBefore) {
    const bounds = [];
    if (filter.startsFrom) bounds.push(`s.starts_at >= ${param(filter.startsFrom, 'timestamptz')}`);
    if (filter.startsBefore) bounds.push(`s.starts_at < ${param(filter.startsBefore, 'timestamptz')}`);
    where.push(session(bounds.join(' and ')));
  }
  // A search whose text holds no word matches nothing (the parsers refuse it; this is the backstop).
  const tsq =
    query.q === null
      ? ''
      : `, (select to_tsquery('english', ${param(searchQuery(query.q) ?? '', 'text')}) as query) tsq`;
  if (query.q !== null) where.push('lo.search @@ tsq.query');
  const conditions = where.length ? where.join(' and ') : 'true';
  const matching = `from learning_opportunity lo${tsq} where ${conditions}`;
  // Only the status (or nothing) filters: the total is catalog_count's, as for the plain list.
  const byStatusOnly =
    query.q === null && Object.entries(filter).every(([name, value]) => name === 'status' || value === undefined);
  const counted = visibility === 'public' && query.q === null ? countedTotal(filter, param) : null;
  const total = counted
    ? counted
    : !byStatusOnly
      ? `(select count(*) ${matching})`
      : visibility === 'public'
        ? `(select n from catalog_count where status = 'PUBLISHED')`
        : `(select coalesce(sum(n), 0) from catalog_count${filter.status ? ` where status = any(${param(filter.status, 'text[]')})` : ''})`;

  const docs = query.fields ? projection(query.fields) : 'd.doc';
  const json = query.fields ? 'cross join lateral (select d.doc::json as j) x' : '';
  let keys: string;
  if (query.sort !== 'nextSessionStartsAt') {
    const order = SORT_SQL[query.sort];
    keys = `(select lo.id, row_number() over (order by ${order}) as ord ${matching} order by ${order} limit ${param(limit, 'int')} offset ${param(offset, 'bigint')})`;
  } else {
    // Sessions read in start order (lo_session_starts_at) from now on, each record at its earliest
    // future session (no earlier one of the same record): `f` stops after offset + limit records.
    // When it holds fewer, it holds them all, and the records without a future session follow, by id.
    const end = param(offset + limit, 'bigint');
    const future = `(select lo.id, s.starts_at from lo_session s join learning_opportunity lo on lo.id = s.learning_opportunity_id${tsq}
                      where s.starts_at > statement_timestamp() and ${conditions}
                        and not exists (select from lo_session e where e.learning_opportunity_id = s.learning_opportunity_id and e.starts_at > statement_timestamp()
                                          and (e.starts_at < s.starts_at or (e.starts_at = s.starts_at and e.pk < s.pk)))
                      order by s.starts_at, lo.id desc limit ${end})`;
    const rest = `(select lo.id ${matching}
                      and not exists (select from lo_session e where e.learning_opportunity_id = lo.id and e.starts_at > statement_timestamp())
                    order by lo.id desc limit greatest(0, ${end} - (select count(*) from f)))`;
    keys = `(select * from (
               select f.id, row_number() over (order by f.starts_at, f.id desc) as ord from f
               union all
               select r.id, (select count(*) from f) + row_number() over (order by r.id desc) from ${rest} r) u
             where u.ord > ${param(offset, 'bigint')})`;
    ctes.push(`f as materialized ${future}`);
  }
  // The page's bytes are bounded as the plain list's are (read-model.ts): a running sum over the
  // rows already read stops the page before the record that would pass `budget` (its first record
  // always stays); `n` says how many it holds. No budget (GraphQL): every row of the page.
  const bounded = budget === null ? '' : `where y.rn = 1 or y.upto <= ${param(budget, 'bigint')}`;
  const page = `(select string_agg(y.doc, ',' order by y.ord) as docs, string_agg(y.digest, ',' order by y.ord) as digests, count(*)::int as n
                   from (select x.*, row_number() over w as rn, sum(octet_length(x.doc) + 1) over w as upto
                           from (select ${docs} as doc, d.doc_digest as digest, k.ord from ${keys} k join learning_opportunity d on d.id = k.id ${json}) x
                         window w as (order by x.ord rows unbounded preceding)) y
                  ${bounded})`;
  // The public catalog's facets without any condition: facet_count's top values, no record read.
  if (query.facets.length && visibility === 'public' && byStatusOnly) {
    const facets = query.facets.map(
      (
        f,
      ) => `(select coalesce(json_agg(json_build_array(c.value, c.n) order by c.n desc, c.value collate "C"), '[]') from (select value, n from facet_count
                where facet = '${f}' and n > 0 order by n desc, value collate "C" limit ${FACET_TOP}) c) as "facet_${f}"`,
    );
    return {
      text: `${ctes.length ? `with ${ctes.join(', ')} ` : ''}select ${total} as total, p.docs, p.digests, p.n, ${facets.join(', ')} from ${page} p`,
      values,
    };
  }
  if (query.facets.length === 0) {
    return {
      text: `${ctes.length ? `with ${ctes.join(', ')} ` : ''}select ${total} as total, p.docs, p.digests, p.n from ${page} p`,
      values,
    };
  }
  const facets = query.facets.map(
    (f) =>
      `(select coalesce(json_agg(json_build_array(f.value, f.n) order by f.n desc, f.value collate "C"), '[]') from (select * from (${FACET_SQL[f]}) v order by v.n desc, v.value collate "C" limit ${FACET_TOP}) f) as "facet_${f}"`,
  );
  return {
    text: `with ${ctes.map((w) => `${w}, `).join('')}m as materialized (select lo.id, lo.format, lo.language, lo.provider_name ${matching})
           select ${byStatusOnly || counted ? total : '(select count(*) from m)'} as total, p.docs, p.digests, p.n, ${facets.join(', ')} from ${page} p`,
    values,
  };
}

type ListRow = { total: string; docs: string | null; digests: string | null; n: number } & Record<
  `facet_${ListFacet}`,
  [string, string][] | undefined
>;

/** The canonical text of a query (its entity tag's input): equal queries give equal text. */
const canonical = (query: ListQuery): string =>
  JSON.stringify([query.filter, query.q, query.sort, query.fields, query.facets]);

export type ListReads = ReturnType<typeof createListReads>;

/** What a filtered page keeps of its byte budget for the facets (at most 5 x 20 values). */
const FACETS_RESERVE_BYTES = 63 * 1024;

/** `pageMaxBytes`: PAGE_MAX_BYTES, the bound of a REST list page's bytes (GraphQL pages pass `bounded: false`). */
export function createListReads(pool: Queryable, pageMaxBytes = PAGE_MAX_BYTES_DEFAULT) {
  // The plain list's budget (the envelope kept out, read-model.ts), less the facets' reserve.
  const budget = pageBudget(pageMaxBytes) - FACETS_RESERVE_BYTES;
  return {
    /** One page of a filtered list; `etag` changes with any byte of the answer. */
    async getPage(
      query: ListQuery,
      limit: number,
      offset: number,
      visibility: Visibility,
      bounded = true,
    ): Promise<ListPage> {
      const row = (await pool.query<ListRow>(listStatement(query, limit, offset, visibility, bounded ? budget : null)))
        .rows[0]!;
      const facets: FacetCounts | null = query.facets.length ? {} : null;
      for (const f of query.facets)
        facets![f] = (row[`facet_${f}`] ?? []).map(([value, n]) => ({ value, count: Number(n) }));
      const totalCount = Number(row.total);
      const etag = createHash('md5')
        .update(
          `${canonical(query)}:${visibility}:${totalCount}:${limit}:${offset}:${row.digests ?? ''}:${JSON.stringify(facets)}`,
        )
        .digest('hex');
      return { totalCount, limit, offset, count: Number(row.n ?? 0), results: row.docs ?? '', facets, etag };
    },
  };
}

/** The list response body: the page's bytes as stored (or projected), then pagination, then facets. */
export function renderListPage(page: ListPage): string {
  const facets = page.facets ? `,"facets":${JSON.stringify(page.facets)}` : '';
  // `next` and `hasMore` as on the plain list (read-model.ts renderPage): a walk continues from `next`.
  const next = page.offset + page.count;
  return `{"results":[${page.results}],"pagination":{"totalCount":${page.totalCount},"limit":${page.limit},"offset":${page.offset},"next":${next},"hasMore":${next < page.totalCount}}${facets}}`;
}
