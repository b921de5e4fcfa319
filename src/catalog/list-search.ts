// Where a filtered page's matches and their count come from (list-keys.ts searchKeys). The public
// catalog's search and facet filters are read from the search bitmaps (migrations search_bitmaps and
// facet_bitmaps): search_count for the exact total, search_matches for the matching records'
// numbers (the page when the matches are few, sorted from list_entry). Each is null when the
// bitmaps cannot answer (a query they do not understand, a rare facet value or too many records
// behind rare words), and the matches are then found through the indexes, as for any other filter.
// And the search's tsquery itself (searchFrom).
import { givenFilters, type ListFilter, type ListQuery, searchQuery, type SearchWords } from './list-model.ts';

/**
 * The sources of a page's matches: `count`, a scalar subquery; `bitmapCount`, the bitmaps' count alone
 * (null when they cannot answer; no bitmaps: null); `hits`, the matches' id and updated_at; `ctes`,
 * what they read.
 */
export type SearchSources = { count: string; bitmapCount: string; hits: string; ctes: string[] };

/** What the bitmaps are asked: `q`, the search (`tsq.query`, or a null tsquery); `from`, the from item it needs (or ''); the facet filters as parallel arrays. */
export type BitmapQuery = { q: string; from: string; facets: string; values: string };

// Facet filters the bitmaps hold (a record's values as keys: migration facet_bitmaps).
const KEYED = new Set<keyof ListFilter>(['format', 'language', 'provider', 'topic', 'country']);

/**
 * The bitmaps' part of a public page in list order, or null when they cannot serve it: relevance
 * (every match's rank is needed), the session order, facets, any condition but a search and facet
 * filters (a date or start window, a city: checking the matches' rows against it was slower than the
 * indexes, 48.6 against 30.6 ms for 12,865 candidates at a million records), or neither a search nor
 * a facet filter. `search`: the search's from item (`(...) tsq`) or ''.
 */
export function bitmapQuery(
  { filter, sort, facets }: ListQuery,
  search: string,
  param: (value: unknown, type: string) => string,
): BitmapQuery | null {
  if ((sort !== '-updatedAt' && sort !== 'updatedAt') || facets.length) return null;
  const given = givenFilters(filter);
  const keyed = given.filter((name) => KEYED.has(name));
  if (keyed.length < given.length || (!search && keyed.length === 0)) return null;
  const pairs = keyed.flatMap((name) => [...new Set(filter[name] as string[])].map((value) => [name, value]));
  return {
    q: search ? 'tsq.query' : 'null::tsquery',
    from: search ? `from ${search}` : '',
    facets: param(
      pairs.map(([name]) => name),
      'text[]',
    ),
    values: param(
      pairs.map(([, value]) => value),
      'text[]',
    ),
  };
}

/** `matching`: the page's from and where (`b`: the catalog with a search, else list_entry); `bitmaps`: what the bitmaps are asked, or null. */
export function searchSources(matching: string, bitmaps: BitmapQuery | null): SearchSources {
  const counted = `(select count(*) ${matching})`;
  const hits = `select b.id, b.updated_at ${matching}`;
  if (!bitmaps) return { count: counted, bitmapCount: 'null::bigint', hits, ctes: [] };
  const { q, from, facets, values } = bitmaps;
  return {
    count: `(select coalesce(search_count(${q}, ${facets}, ${values}), ${counted}) ${from})`,
    bitmapCount: `(select search_count(${q}, ${facets}, ${values}) ${from})`,
    hits: `select e.id, e.updated_at from sm join list_entry e on e.rn = any(sm.rns) where sm.rns is not null
           union all ${hits} and (select sm.rns from sm) is null`,
    ctes: [`sm as materialized (select search_matches(${q}, ${facets}, ${values}) as rns ${from})`],
  };
}

// A search's from item (`(...) tsq`: its tsquery as `tsq.query`), '' without one; the text as sent is
// OR'd whole when it differs from its NFKC form (list-model.ts). No word matches nothing (the parsers
// refuse it). The last word, a prefix, falls back to 'simple' when 'english' drops it as a stop word
// (with 'english' alone "q=a" found nothing, while "q=b" found every word starting with b).
export function searchFrom(q: string | null, param: (value: unknown, type: string) => string): string {
  const search = q === null ? undefined : searchQuery(q);
  const matching = (words: SearchWords | null | undefined) => {
    const last = param(words?.last ?? '', 'text');
    return `select w && coalesce(nullif(l, ''::tsquery), to_tsquery('simple', ${last})) as query
         from to_tsquery('english', ${param(words?.words ?? '', 'text')}) w, to_tsquery('english', ${last}) l`;
  };
  if (q === null) return '';
  return search?.sent
    ? `(select (${matching(search)}) || (${matching(search.sent)}) as query) tsq`
    : `(${matching(search)}) tsq`;
}
