// Where a search's matches and their count come from (list-keys.ts searchKeys). A search of the
// public catalog with no other condition reads the search bitmaps (migration search_bitmaps):
// search_count for the exact total, search_matches for the matching records' numbers (the page of
// a search with few matches, sorted from list_entry); each is null when the bitmaps cannot answer
// (a query they do not understand, or rare lexemes holding too many records), and the matches are
// then found through the search index, as for any other search.

/** The sources of a search: `count`, a scalar subquery; `hits`, the matches' id and updated_at; `ctes`, what they read. */
export type SearchSources = { count: string; hits: string; ctes: string[] };

/**
 * `matching`: the search's from and where (`b`, the catalog); `tsq`: its `, (...) tsq` from item
 * when the search is the public catalog's with no other condition, else null.
 */
export function searchSources(matching: string, tsq: string | null): SearchSources {
  const counted = `(select count(*) ${matching})`;
  const hits = `select b.id, b.updated_at ${matching}`;
  if (!tsq) return { count: counted, hits, ctes: [] };
  const from = tsq.replace(/^, /, '');
  return {
    count: `(select coalesce(search_count(tsq.query), ${counted}) from ${from})`,
    hits: `select e.id, e.updated_at from sm join list_entry e on e.rn = any(sm.rns) where sm.rns is not null
           union all ${hits} and (select sm.rns from sm) is null`,
    ctes: [`sm as materialized (select search_matches(tsq.query) as rns from ${from})`],
  };
}
