// The facets of a filtered list (docs/contract.md, "Filters"): records per value over the whole filtered result,
// top FACET_TOP values each, most frequent first (ties by value, code point order). Read from the
// matching records' narrow rows (`m`, list_entry: migration list_entry) in one pass each; the
// unfiltered public catalog's from facet_count (migration facet_count), no record read; the public
// catalog's filtered by one facet value from the counts of pairs of values (migration facet_pairs).
import { SINGLE_VALUED } from './list-counts.ts';
import { FACET_TOP, givenFilters, type ListFacet, type ListQuery } from './list-model.ts';

// Each facet over the matching records `m`: records per value (a record counts once per value; the
// arrays of list_entry hold each value once). The arrays are unnested in the select list (one
// ProjectSet over `m`), which took half the time of a lateral unnest per row at 37,000 records.
const FACET_SQL: Record<ListFacet, string> = {
  format: 'select m.format as value, count(*) as n from m group by 1',
  language: 'select m.language as value, count(*) as n from m where m.language is not null group by 1',
  provider: 'select m.provider_name as value, count(*) as n from m where m.provider_name is not null group by 1',
  topic: 'select t.value, count(*) as n from (select unnest(m.topics) as value from m) t group by 1',
  country: 'select c.value, count(*) as n from (select unnest(m.countries) as value from m) c group by 1',
};

/** The columns of `m` that FACET_SQL and the page's order (list-keys.ts hitKeys) read, from a list_entry row `alias`. */
const matchedColumns = (alias: string) =>
  ['id', 'format', 'language', 'provider_name', 'topics', 'countries', 'updated_at']
    .map((c) => `${alias}.${c}`)
    .join(', ');

/**
 * The CTEs of the matching records' narrow rows (`m`) and their number (`n`): from list_entry `b`
 * (`matching`: its from and where), or for a search from the catalog `b` joined with list_entry (`tsq`,
 * the search's from item, and `where`), with each match's rank when the page is by relevance.
 */
export function matchedRows(source: { matching: string } | { tsq: string; where: string }, relevance: boolean): string {
  const m =
    'matching' in source
      ? `select ${matchedColumns('b')} ${source.matching}`
      : `select ${matchedColumns('x')}${relevance ? ', ts_rank(b.search, tsq.query) as rank' : ''}
           from learning_opportunity b join list_entry x on x.id = b.id${source.tsq} where ${source.where}`;
  return `m as materialized (${m}), n as materialized (select count(*) as n from m)`;
}

/** A facet's select-list entry over the matching records `m` (a JSON array of [value, n]). */
export const matchedFacet = (f: ListFacet) => `${matchedCounts(f)} as "facet_${f}"`;

const matchedCounts = (f: ListFacet) =>
  `(select coalesce(json_agg(json_build_array(f.value, f.n) order by f.n desc, f.value collate "C"), '[]') from (select * from (${FACET_SQL[f]}) v order by v.n desc, v.value collate "C" limit ${FACET_TOP}) f)`;

/**
 * The CTE `fp` of a public list filtered by one facet and nothing else, one value of it or several of
 * a single-valued one (`country=DE`, `language=de,fr`): its facets from the counts of pairs of values
 * (facet_pair_counts: one row, null when they cannot answer). Null for any other filter.
 */
export function pairedFacets(query: ListQuery, param: (value: unknown, type: string) => string): string | null {
  const { filter, q, facets } = query;
  const given = givenFilters(filter);
  if (q !== null || given.length !== 1 || !(given[0]! in FACET_SQL)) return null;
  const values = [...new Set(filter[given[0]!] as string[])];
  if (values.length !== 1 && !SINGLE_VALUED.has(given[0]!)) return null;
  const counts = [param(given[0], 'text'), param(values, 'text[]'), param(facets, 'text[]'), param(FACET_TOP, 'int')];
  return `fp as materialized (select facet_pair_counts(${counts.join(', ')}) as j)`;
}

/** A facet's select-list entry from the pairs' counts (`fp`), else over the matching records `m`. */
export const pairedFacet = (f: ListFacet) =>
  `coalesce((select (fp.j->'${f}')::json from fp), ${matchedCounts(f)}) as "facet_${f}"`;

/** A facet's select-list entry for the whole public catalog: facet_count's top values. */
export const countedFacet = (f: ListFacet) =>
  `(select coalesce(json_agg(json_build_array(c.value, c.n) order by c.n desc, c.value collate "C"), '[]') from (select value, n from facet_count
      where facet = '${f}' and n > 0 order by n desc, value collate "C" limit ${FACET_TOP}) c) as "facet_${f}"`;
