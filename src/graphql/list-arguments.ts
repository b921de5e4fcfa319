// The arguments of GraphQL learningOpportunities (filter, search, sort, facets) as the list query of
// catalog/list-query.ts: the same semantics as the REST parameters (catalog/list-parameters.ts), every
// bad value a BAD_USER_INPUT naming its argument (e.g. `filter.updatedSince`).
import { badInput, type InvalidParam } from '../kernel/errors.ts';
import {
  canonicalLanguages,
  LIST_VALUES_MAX,
  type ListFacet,
  type ListFilter,
  type ListQuery,
  type ListSort,
  searchTextProblem,
} from '../catalog/list-query.ts';
import { parseTimestamp } from '../catalog/list-parameters.ts';

type Args = Record<string, unknown>;

const SORTS: Record<string, ListSort> = {
  UPDATED_AT_DESC: '-updatedAt',
  UPDATED_AT: 'updatedAt',
  NEXT_SESSION_STARTS_AT: 'nextSessionStartsAt',
  RELEVANCE: 'relevance',
};
const TIMES = ['updatedSince', 'updatedBefore', 'startsFrom', 'startsBefore'] as const;
const LISTS = ['format', 'language', 'topic', 'provider', 'country', 'city', 'status'] as const;

/** The list query of the arguments (already typed by the schema: enums and lists are checked there). */
// Half of a UTF-16 surrogate pair alone ("\ud800" in a JSON variable): no UTF-8 holds it, and it was
// searched for as U+FFFD (REST refuses the same text, %ED%A0%80, as a query string that is not UTF-8).
const ILL_FORMED = 'must be well-formed Unicode text (it holds half of a UTF-16 surrogate pair alone)';

export function parseListArguments(args: Args): ListQuery {
  const problems: InvalidParam[] = [];
  const given = (args.filter ?? {}) as Record<string, unknown>;
  const filter: ListFilter = {};
  for (const name of TIMES) {
    const value = given[name];
    if (value === undefined || value === null) continue;
    const date = parseTimestamp(value as string);
    if (date) filter[name] = date;
    else problems.push({ name: `filter.${name}`, reason: 'must be a timestamp such as 2026-03-01T09:00:00.000Z' });
  }
  for (const name of LISTS) {
    const value = given[name] as string[] | null | undefined;
    if (value === undefined || value === null) continue;
    if (value.length === 0 || value.length > LIST_VALUES_MAX || value.some((v) => v === ''))
      problems.push({ name: `filter.${name}`, reason: `must hold 1 to ${LIST_VALUES_MAX} non-empty values` });
    // PostgreSQL text cannot hold NUL: such a value would fail the statement, not match.
    else if (value.some((v) => v.includes('\u0000')))
      problems.push({ name: `filter.${name}`, reason: 'must not contain NUL characters' });
    else if (value.some((v) => !v.isWellFormed())) problems.push({ name: `filter.${name}`, reason: ILL_FORMED });
    // Languages canonical, countries and cities in any case, as the REST parameters (catalog/list-parameters.ts).
    else filter[name] = name === 'language' ? canonicalLanguages(value) : [...new Set(value)];
  }
  const q = (args.search as string | null | undefined) ?? null;
  // As `q` on REST: a NUL is refused, not read as a word separator.
  if (q !== null && q.includes('\u0000')) problems.push({ name: 'search', reason: 'must not contain NUL characters' });
  else if (q !== null && !q.isWellFormed()) problems.push({ name: 'search', reason: ILL_FORMED });
  else if (q !== null) {
    const reason = searchTextProblem(q);
    if (reason) problems.push({ name: 'search', reason });
  }
  const sort = SORTS[(args.sort as string | null | undefined) ?? 'UPDATED_AT_DESC']!;
  if (sort === 'relevance' && q === null) problems.push({ name: 'sort', reason: 'RELEVANCE needs search' });
  const facets = [
    ...new Set(((args.facets as string[] | null | undefined) ?? []).map((f) => f.toLowerCase() as ListFacet)),
  ];
  if (problems.length) throw badInput(problems);
  return { filter, q, sort, fields: null, facets };
}
