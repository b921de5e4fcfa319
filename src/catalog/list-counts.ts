// The exact total of a filtered public list read from maintained counts instead of a count over its
// matches (list-sql.ts), when the filter allows it: facet_count (migration facet_count) for one
// facet filter alone, list_bucket (migration list_buckets) for the updated_at bounds alone; and for a
// session start window alone, one range of list_session's index (migration list_session), no distinct.
// A search's: list-search.ts.
import { givenFilters, type ListFilter, type ListQuery } from './list-model.ts';
import { bitmapQuery, searchSources } from './list-search.ts';
import type { Visibility } from './read-model.ts';

// Facets whose values a record holds one of (a sum over several values counts each record once).
export const SINGLE_VALUED: ReadonlySet<string> = new Set(['format', 'language', 'provider']);
// Filters that ignore case (list-sql.ts): a value stands for every stored spelling of it.
const ANY_CASE = new Set(['country', 'city']);
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
 * for any values of a single-valued facet, one value of topic, country or city. Country and city
 * ignore case: facet_count counts each stored spelling apart, so one value's total is the count of
 * its only spelling present, read by (facet, lower(value)) (migration places_any_case); should the
 * published records hold it in several spellings (`Lyon`, `LYON`), a record may hold two of them
 * and the sum would count it twice: then `matches`, the count over the matches. The updated_at
 * bounds alone: list_bucket's range counts (migration list_buckets) above each bound plus the rows
 * between the bound and the next range (at most one range's), checked against catalog_count as the
 * plain list's deep pages are (read-model.ts): if the ranges ever disagree, a plain count. A start
 * window alone: the session rows that are their record's first in the window, read from the index.
 */
export function countedTotal(
  filter: ListFilter,
  param: (value: unknown, type: string) => string,
  matches: string,
): string | null {
  const given = givenFilters(filter);
  if (given.length === 1 && FACET_OF[given[0]!]) {
    const name = given[0]!;
    const values = [...new Set(filter[name] as string[])];
    if (!SINGLE_VALUED.has(name) && values.length !== 1) return null;
    if (ANY_CASE.has(name)) {
      const spellings = `from facet_count where facet = '${FACET_OF[name]}' and lower(value) = lower(${param(values[0], 'text')}) and n > 0`;
      return `(select case when (select count(*) ${spellings}) <= 1 then (select coalesce(sum(n), 0) ${spellings}) else ${matches} end)`;
    }
    return `(select coalesce(sum(n), 0) from facet_count where facet = '${FACET_OF[name]}' and value = any(${param(values, 'text[]')}))`;
  }
  if (given.length && given.every((name) => name === 'startsFrom' || name === 'startsBefore')) {
    // One range of list_session_starts, read from the index alone.
    return `(select count(*) from list_session s where s.status = 'PUBLISHED' and ${firstInWindow(filter, param, 's')})`;
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

/**
 * Each record with a session start in `filter`'s window once, over list_session rows `s`: its first
 * session in the window is the one whose previous start (in the record's own start order) is before
 * the window, or which has none. A range of list_session_starts (with the status condition).
 */
export function firstInWindow(filter: ListFilter, param: (value: unknown, type: string) => string, s: string): string {
  const from = filter.startsFrom ? param(filter.startsFrom, 'timestamptz') : null;
  return [
    from ? `${s}.starts_at >= ${from}` : null,
    filter.startsBefore ? `${s}.starts_at < ${param(filter.startsBefore, 'timestamptz')}` : null,
    from ? `(${s}.prev_starts_at is null or ${s}.prev_starts_at < ${from})` : `${s}.prev_starts_at is null`,
  ]
    .filter(Boolean)
    .join(' and ');
}

/**
 * The exact total of the matches of `query`, without a search (`matching`: their from and where): the
 * maintained counts where they answer (catalog_count, countedTotal, the search bitmaps' facet values),
 * else a count over the matches.
 */
export function totalOf(
  query: ListQuery,
  visibility: Visibility,
  param: (value: unknown, type: string) => string,
  matching: string,
): string {
  const { filter } = query;
  const counted = `(select count(*) ${matching})`;
  if (givenFilters(filter).every((name) => name === 'status'))
    return visibility === 'public'
      ? `(select n from catalog_count where status = 'PUBLISHED')`
      : `(select coalesce(sum(n), 0) from catalog_count${filter.status ? ` where status = any(${param(filter.status, 'text[]')})` : ''})`;
  if (visibility !== 'public') return counted;
  const fromCounts = countedTotal(filter, param, counted);
  if (fromCounts) return fromCounts;
  const bitmaps = bitmapQuery(query, '', param);
  return bitmaps ? searchSources(matching, bitmaps).count : counted;
}
