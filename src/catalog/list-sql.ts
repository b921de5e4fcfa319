// The one statement of a filtered page (docs/contract.md, "Filters"), from fixed fragments, the values as
// parameters: the exact total, the page's records (the stored doc, or a projection cut out of the
// doc's own text: no record is re-rendered in Node) and the facet counts. The conditions, counts
// and facets read list_entry, the catalog's narrow rows (migration list_entry): `b` is list_entry,
// or with a search the catalog itself (its search vector, migration list_query), list_entry's own
// conditions then by primary key. The page's docs are read by primary key, for the page alone.
import type { QueryConfig } from 'pg';
import { countedTotal, totalOf } from './list-counts.ts';
import { countedFacet, matchedFacet, matchedRows, pairedFacet, pairedFacets } from './list-facets.ts';
import { givenFilters, RECORD_FIELDS, type ListFilter, type ListQuery, type RecordField } from './list-model.ts';
import type { Visibility } from './read-model.ts';
import { byDensity, hitKeys, matchedSessionKeys, orderedKeys, searchKeys, sessionKeys } from './list-keys.ts';
import { bitmapQuery, searchFrom, searchSources } from './list-search.ts';
import { longWindow, OUTSIDE_MAX, outsideWindow, placeAndWindow } from './list-windows.ts';

type Param = (value: unknown, type: string) => string;

// The projection of a doc: its members cut out of its own text (json, not jsonb, keeps each value's
// bytes and the members' order), in the record's order.
function projection(fields: RecordField[]): string {
  const wanted = new Set<RecordField>([...fields, 'id', 'updatedAt']);
  const members = RECORD_FIELDS.filter((f) => wanted.has(f)).map(
    (f, i) => `'${i ? ',' : ''}"${f}":' || (x.j->'${f}')::text`,
  );
  return `'{' || ${members.join(' || ')} || '}'`;
}

/**
 * The conditions of a filter: on `b` (columns both tables have), and on list_entry (alias `e`) alone;
 * `status`, the status condition alone on a table alias (list_session's rows hold their record's).
 */
function conditions(
  query: ListQuery,
  visibility: Visibility,
  param: Param,
  e: string,
): { base: string[]; entry: string[]; status: (alias: string) => string | null } {
  const { filter } = query;
  const base: string[] = [];
  const entry: string[] = [];
  const status = statusCondition(filter, visibility, param);
  if (status('b') !== null) base.push(status('b')!);
  if (filter.updatedSince) base.push(`b.updated_at >= ${param(filter.updatedSince, 'timestamptz')}`);
  if (filter.updatedBefore) base.push(`b.updated_at < ${param(filter.updatedBefore, 'timestamptz')}`);
  if (filter.format) base.push(`b.format = any(${param(filter.format, 'text[]')})`);
  if (filter.language) base.push(`b.language = any(${param(filter.language, 'text[]')})`);
  if (filter.provider) base.push(`b.provider_name = any(${param(filter.provider, 'text[]')})`);
  if (filter.topic) entry.push(`${e}.topics && ${param(filter.topic, 'text[]')}`);
  // Countries and cities are free text, stored as sent: both sides in lower case (`city=berlin` finds
  // `Berlin`), read from list_entry's GINs of the lowered arrays (migration places_any_case).
  if (filter.city) entry.push(`lower_each(${e}.cities) && lower_each(${param(filter.city, 'text[]')})`);
  entry.push(...placeAndWindow(query, param, e, status('s')));
  return { base, entry, status };
}

// The page's docs in order, bounded as the plain list's are (read-model.ts): a running sum over the
// rows already read stops the page before the record that would pass `budget` (its first record
// always stays); `n` says how many it holds. No budget (GraphQL): every row of the page.
function pageOf(keys: string, fields: RecordField[] | null, bounded: string): string {
  const docs = fields ? projection(fields) : 'd.doc';
  const json = fields ? 'cross join lateral (select d.doc::json as j) x' : '';
  return `(select string_agg(y.doc, ',' order by y.ord) as docs, string_agg(y.digest, ',' order by y.ord) as digests, count(*)::int as n
                   from (select x.*, row_number() over w as rn, sum(octet_length(x.doc) + 1) over w as upto
                           from (select ${docs} as doc, d.doc_digest as digest, k.ord from ${keys} k join learning_opportunity d on d.id = k.id ${json}) x
                         window w as (order by x.ord rows unbounded preceding)) y
                  ${bounded})`;
}

/**
 * The statement of one page. Values travel as parameters; only fixed SQL fragments are spliced.
 * `outsideMax`: the long form's bound (list-windows.ts outsideWindow; tests pass 0 to run the other form).
 */
export function listStatement(
  query: ListQuery,
  limit: number,
  offset: number,
  visibility: Visibility,
  budget: number | null = null,
  outsideMax = OUTSIDE_MAX,
): QueryConfig {
  const values: unknown[] = [];
  const param: Param = (value, type) => {
    values.push(value);
    return `$${values.length}::${type}`;
  };
  const page = (outside: boolean) => pageStatement(query, limit, offset, visibility, budget, param, outside);
  if (!longWindow(query)) return { text: page(false), values };
  const status = statusCondition(query.filter, visibility, param);
  const outside = outsideWindow(query, param, status('s'), status('e'), outsideMax);
  // A long start window: the page and total from the records outside it when they are few (`wc`),
  // else as any window. Only one branch runs (its condition holds no column: a one-time filter).
  return {
    text: `with wl as materialized (select ${outside.few} as few), wc as materialized (${outside.records})
           select * from (${page(true)}) l where (select few from wl)
           union all select * from (${page(false)}) i where not (select few from wl)`,
    values,
  };
}

/**
 * The status condition of `filter` on a table alias (null: any status). The public catalog is its
 * published records; an internal reader's, the statuses it asks for.
 */
function statusCondition(filter: ListFilter, visibility: Visibility, param: Param): (alias: string) => string | null {
  if (visibility === 'public') return (alias) => `${alias}.status = 'PUBLISHED'`;
  if (!filter.status) return () => null;
  const statuses = param(filter.status, 'text[]');
  return (alias) => `${alias}.status = any(${statuses})`;
}

/** The conditions of `query`'s matches on `b` (the catalog with a search, else list_entry), and its status condition on an alias. */
function matchWhere(
  query: ListQuery,
  visibility: Visibility,
  param: Param,
): { where: string; status: (alias: string) => string | null } {
  const searched = query.q !== null;
  const { base, entry, status } = conditions(query, visibility, param, searched ? 'e' : 'b');
  const where = [...base];
  if (searched) where.push('b.search @@ tsq.query');
  if (searched && entry.length)
    where.push(`exists (select from list_entry e where e.id = b.id and ${entry.join(' and ')})`);
  else where.push(...entry);
  return { where: where.length ? where.join(' and ') : 'true', status };
}

/**
 * The statement text of one page (listStatement). `outside`: the long form of a start window (the
 * CTE `wc` holds the records outside it): the matches are those of the query without the window
 * but for those, and so is their total.
 */
function pageStatement(
  query: ListQuery,
  limit: number,
  offset: number,
  visibility: Visibility,
  budget: number | null,
  param: Param,
  outside: boolean,
): string {
  const rest: ListQuery = { ...query, filter: { ...query.filter, startsFrom: undefined, startsBefore: undefined } };
  const { filter } = outside ? rest : query;
  const searched = query.q !== null;
  const searchItem = searchFrom(query.q, param);
  const tsq = searchItem && `, ${searchItem}`; // joined to the matches' table
  const { where: restWhere, status } = matchWhere(outside ? rest : query, visibility, param);
  const whereSql = outside ? `${restWhere} and b.id not in (select id from wc)` : restWhere;
  const table = `${searched ? 'learning_opportunity' : 'list_entry'} b`;
  const matching = `from ${table}${tsq} where ${whereSql}`;
  // Only the status (or nothing) filters: the total is catalog_count's, as for the plain list.
  const byStatusOnly = !outside && !searched && givenFilters(filter).every((name) => name === 'status');
  const counted =
    visibility === 'public' && !searched && !outside
      ? countedTotal(filter, param, `(select count(*) ${matching})`)
      : null;
  // The long form's: the query's without the window, less the records outside it that it holds
  // (built only where it is used: its parameters must all appear in the text).
  const plainTotal =
    counted ?? (byStatusOnly ? totalOf(query, visibility, param, matching) : `(select count(*) ${matching})`);
  const total = outside
    ? () =>
        `(${totalOf(rest, visibility, param, `from ${table} where ${restWhere}`)} - (select count(*) from ${table} where ${restWhere} and b.id in (select id from wc)))`
    : () => plainTotal;

  const ctes: string[] = [];
  let keys: string;
  let countedTotalSql = total;
  // Facets over the matches (the public catalog's unfiltered ones are counted): the matches once (`m`), for
  // the facets, the total and, but in session order, the page (hitKeys: a search that matched nothing
  // walked the catalog's order for its empty page, 2 s at a million records).
  const facetsOverMatches = query.facets.length > 0 && !(visibility === 'public' && byStatusOnly);
  if (facetsOverMatches) {
    ctes.push(matchedRows(searched ? { tsq, where: whereSql } : { matching }, query.sort === 'relevance'));
    countedTotalSql = byStatusOnly || counted ? total : () => '(select n from n)';
  }
  // The public catalog filtered by one facet value: its facets from the counts of pairs, the matches
  // (`m`, never read when the pairs answer) only when they cannot; its total is counted (`counted`).
  const paired = facetsOverMatches && visibility === 'public' && !outside ? pairedFacets(query, param) : null;
  if (paired) ctes.push(paired);
  // The public catalog's search and facet filters: the search bitmaps (list-search.ts).
  const bitmaps = visibility === 'public' && counted === null ? bitmapQuery(query, searchItem, param) : null;
  if ((searched || bitmaps) && query.sort !== 'nextSessionStartsAt' && query.facets.length === 0) {
    const sources = searchSources(matching, bitmaps);
    const search = searchKeys(query.sort, matching, sources, param(limit, 'int'), param(offset, 'bigint'), ctes);
    [keys, countedTotalSql] = [search.keys, () => search.total];
  } else if (query.sort !== 'nextSessionStartsAt') {
    keys =
      facetsOverMatches && !paired
        ? hitKeys(query.sort, matching, 'm', param(limit, 'int'), param(offset, 'bigint'))
        : orderedKeys(query.sort, matching, param(limit, 'int'), param(offset, 'bigint'));
  } else {
    const [end, start] = [param(offset + limit, 'bigint'), param(offset, 'bigint')];
    const walk = (bound?: string) => sessionKeys(table, tsq, whereSql, status('s'), end, start, bound);
    // The matches beside the sort (no facets): found once (`ids`, each with its next session start from
    // its list_entry row) for the count and the page: a start window with a country scanned the GIN
    // indexes twice otherwise (25-35 ms each at 1,000,000 records). Where their number is known without
    // them (the search bitmaps' count, the maintained counts, the facets' total), the page walks the
    // sessions instead if they are dense (byDensity): `q=learn`, every record, took 2.8 s for `ids`; one
    // provider (1,946 of a million records) walked 23,273 sessions for its first page.
    const matched = !byStatusOnly && query.facets.length === 0;
    const shared = matched && counted === null;
    const sessions = byStatusOnly ? walk() : matchedSessionKeys(matching, searched, end, start);
    ctes.push(sessions.f);
    keys = sessions.keys;
    if (shared && !outside) countedTotalSql = () => '(select count(*) from ids)';
    const counter =
      shared && visibility === 'public' && !outside
        ? bitmapQuery({ ...query, sort: '-updatedAt' }, searchItem, param)
        : null;
    // The number of matches, where known without them (facets beside filters: the total's): the walk
    // reads at most that many future sessions (what `ids` reads), then gives way to the matches.
    let n = !matched && !byStatusOnly ? countedTotalSql() : null;
    if (counter || (shared && outside) || (matched && counted !== null)) {
      const known = counter ? searchSources(matching, counter).bitmapCount : countedTotalSql();
      ctes.push(`n as materialized (select ${known} as n)`);
      n = '(select n from n)';
      countedTotalSql = () => (counter ? 'coalesce((select n from n), (select count(*) from ids))' : n!);
    }
    if (n) {
      const walked = walk(n);
      ctes.push(walked.f);
      keys = byDensity(walked.keys, sessions.keys, param(limit, 'int'), start, walked.cut, n);
    }
  }
  const bounded = budget === null ? '' : `where y.rn = 1 or y.upto <= ${param(budget, 'bigint')}`;
  const page = pageOf(keys, query.fields, bounded);
  const facets = query.facets.map(paired ? pairedFacet : facetsOverMatches ? matchedFacet : countedFacet);
  return `${ctes.length ? `with ${ctes.join(', ')} ` : ''}select ${countedTotalSql()} as total, p.docs, p.digests, p.n${facets.map((f) => `, ${f}`).join('')} from ${page} p`;
}
