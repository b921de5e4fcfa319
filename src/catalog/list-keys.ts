// The keys of a filtered page (list-sql.ts): the page's record ids and their order (`ord`), found
// the cheapest way for the sort: by walking the order's index, from a search's matches, or from the
// session rows in start order.
import type { ListSort } from './list-model.ts';
import type { SearchSources } from './list-search.ts';

const SORT_SQL: Record<Exclude<ListSort, 'nextSessionStartsAt'>, string> = {
  '-updatedAt': 'b.updated_at desc, b.id desc',
  updatedAt: 'b.updated_at asc, b.id desc',
  relevance: 'ts_rank(b.search, tsq.query) desc, b.id desc',
};
// The relevance order over a search's matches (`hits`, their ranks computed once).
const HIT_SORT_SQL = { ...SORT_SQL, relevance: 'b.rank desc, b.id desc' };

/** The page's record ids and their order (`ord`), for any sort but nextSessionStartsAt. */
export function orderedKeys(
  sort: ListSort,
  matching: string,
  limit: string,
  offset: string,
  orders = SORT_SQL,
): string {
  const order = orders[sort as keyof typeof SORT_SQL];
  return `(select b.id, row_number() over (order by ${order}) as ord ${matching} order by ${order} limit ${limit} offset ${offset})`;
}

// sort=nextSessionStartsAt: sessions read in start order from now on (list_session_starts, migration
// list_session), each record at its next session: the one after now whose previous start (in the
// record's start order) is at or before now, or which has none; `f` (a CTE) stops after offset +
// limit records. When it holds fewer, it holds them all, and the records without a future session
// follow, by id (none of their list_session rows is after now): only read when `f` is short (a
// condition on `f` alone, checked once before any row), at most offset + limit of them (a bound the
// planner sees: an expression over `f` as the limit made it expect a tenth of the catalog, and
// JIT-compile the statement, 13 ms).
// `table` and `tsq`: the matching records' source (`b`), `where` their conditions; `status`: the
// status condition on the session rows, or null (list_session's rows hold their record's).
// `bound` (SQL, optional): the most future session rows the walk reads; `cut` says it stopped there
// short of the page, which then cannot be trusted (byDensity reads the matches instead). Matches that
// are many but have few future sessions (a language whose courses are mostly self-paced or over) read
// every future session of the catalog unbounded: 76,490 session rows for one page at 15,000 records.
export function sessionKeys(
  table: string,
  tsq: string,
  where: string,
  status: string | null,
  end: string,
  offset: string,
  bound?: string,
): { keys: string; f: string; cut: string } {
  const upcoming = `${status ? `${status} and ` : ''}s.starts_at > statement_timestamp()`;
  const future = `from list_session s where ${upcoming}`;
  const sessions = bound
    ? `(select s.id, s.starts_at, s.prev_starts_at ${future} order by s.starts_at, s.id desc limit ${bound}) s`
    : 'list_session s';
  const f = `f as materialized (select b.id, s.starts_at from ${sessions} join ${table} on b.id = s.id${tsq}
                      where ${bound ? '' : `${upcoming} and `}(s.prev_starts_at is null or s.prev_starts_at <= statement_timestamp()) and ${where}
                      order by s.starts_at, b.id desc limit ${end})`;
  const rest = `(select b.id from ${table}${tsq} where (select count(*) from f) < ${end} and ${where}
                      and not exists (select from list_session x where x.id = b.id and x.starts_at > statement_timestamp())
                    order by b.id desc limit ${end})`;
  if (!bound) return { keys: sessionPage('f', rest, end, offset), f, cut: 'false' };
  // Once (a materialized CTE, read only if the walk is taken): at most `bound` more index rows.
  const cutCte = `f_cut as materialized (select (select count(*) from f) < ${end}
                      and (select count(*) from (select ${future} limit ${bound}) c) >= ${bound} as cut)`;
  return { keys: sessionPage('f', rest, end, offset), f: `${f}, ${cutCte}`, cut: '(select cut from f_cut)' };
}

/**
 * sort=nextSessionStartsAt over the matches (`matching`: their from and where, over the catalog when
 * `searched`), found once (`ids (id, next_at)`: each match's next session start after now, or null)
 * and ordered as sessionKeys orders them: by that start, then the matches without one, by id. The
 * next start comes from the match's list_entry row, read anyway to find it (its `starts`), where
 * sessionKeys looked each match up in list_session (4,612 index probes, about a third of
 * `country+starts+sort` at a million records): the element after those at or before now in the
 * ascending `starts`, width_bucket's binary search (a subquery over unnest(starts) took 6-7 of its 21 ms).
 */
export function matchedSessionKeys(
  matching: string,
  searched: boolean,
  end: string,
  offset: string,
): { keys: string; f: string } {
  const next = (starts: string) => `${starts}[width_bucket(statement_timestamp(), ${starts}) + 1]`;
  const nextAt = searched ? `(select ${next('x.starts')} from list_entry x where x.id = b.id)` : next('b.starts');
  const f = `ids as materialized (select b.id, ${nextAt} as next_at ${matching}),
    fm as materialized (select id, next_at as starts_at from ids where next_at is not null order by next_at, id desc limit ${end})`;
  const rest = `(select id from ids where (select count(*) from fm) < ${end} and next_at is null order by id desc limit ${end})`;
  return { keys: sessionPage('fm', rest, end, offset), f };
}

/** A page in session order: the records of the CTE `f` (by start), then those of `rest` (by id). */
function sessionPage(f: string, rest: string, end: string, offset: string): string {
  return `(select * from (
               select f.id, row_number() over (order by f.starts_at, f.id desc) as ord from ${f} f
               union all
               select r.id, (select count(*) from ${f}) + row_number() over (order by r.id desc) from ${rest} r) u
             where u.ord > ${offset} and u.ord <= ${end})`;
}

/**
 * The page of matches already found (`hits`: a CTE of their id, updated_at and, for relevance, rank;
 * `n`: a CTE of their number), in the sort's order (`matching`: their from and where). Relevance:
 * sorted from `hits`. List order: by the cheaper of two ways, chosen by that number: walking the
 * order's index until the page is full reads about (offset + limit) x catalog / matches rows, sorting
 * the matches reads the matches. The branch not taken is never run (its condition holds no column: a
 * one-time filter).
 */
export function hitKeys(
  sort: Exclude<ListSort, 'nextSessionStartsAt'>,
  matching: string,
  hits: string,
  limit: string,
  offset: string,
): string {
  if (sort === 'relevance') return orderedKeys(sort, `from ${hits} b`, limit, offset, HIT_SORT_SQL);
  return byDensity(
    orderedKeys(sort, matching, limit, offset),
    orderedKeys(sort, `from ${hits} b`, limit, offset),
    limit,
    offset,
    'false',
    '(select n from n)',
  );
}

/**
 * Keys by a walk of the order (`walk`) when the matches (their number `n`, SQL; null: unknown) are
 * dense enough for the page and the walk was not cut short (`cut`, SQL), else from the matches
 * (`found`): the walk reads about (offset + limit) x catalog / matches rows, the other way the
 * matches. Only one branch runs (its condition holds no column: a one-time filter).
 */
export function byDensity(walk: string, found: string, limit: string, offset: string, cut: string, n: string): string {
  const dense = `(coalesce(${n} * ${n} > (${offset} + ${limit}) * (select coalesce(sum(n), 0) from catalog_count), false) and not ${cut})`;
  return `(select * from ${walk} w where ${dense} union all select * from ${found} h where not (${dense}))`;
}

/**
 * The page of a search sorted by relevance or in list order (`matching`: its from and where) and its
 * exact total (`sources`: where the matches and their count come from, list-search.ts); the CTEs
 * they read are added to `ctes`.
 * - Relevance: every match's rank is needed, so the matches are found once, for the count and the
 *   page (one bitmap scan of the search index and one visit of each matching row, where the count
 *   and the ranking each did both: the heap visits are most of a search's time).
 * - List order: the count first (one bitmap scan), then the page by hitKeys' choice. Many matches:
 *   the walk (`q=machine learn`, 66,678 of 1,000,000: about 300 rows); few: the matches (`q=orchard
 *   academy`, 1,271: the walk read 22,000 rows, 160 ms), from the search bitmaps when they answer
 *   (list-search.ts).
 */
export function searchKeys(
  sort: Exclude<ListSort, 'nextSessionStartsAt'>,
  matching: string,
  sources: SearchSources,
  limit: string,
  offset: string,
  ctes: string[],
): { total: string; keys: string } {
  if (sort === 'relevance') {
    ctes.push(`hits as materialized (select b.id, ts_rank(b.search, tsq.query) as rank ${matching})`);
    return { total: '(select count(*) from hits)', keys: hitKeys(sort, matching, 'hits', limit, offset) };
  }
  ctes.push(
    ...sources.ctes,
    `n as materialized (select ${sources.count} as n)`,
    `hits as materialized (${sources.hits})`,
  );
  return { total: '(select n from n)', keys: hitKeys(sort, matching, 'hits', limit, offset) };
}
