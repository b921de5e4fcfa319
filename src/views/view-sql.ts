// The SQL spelling of a view's membership rule (views/view.ts: facetsInView), over a facets
// expression of view_facets' shape (jsonb: migration view_states): the stored facets of an event
// (event.view_before, view_after), view_facets(doc), or a record's list_entry row (listEntryFacetsSql).
// test/views/view-oracle.test.ts holds the spellings equal.
import { type View, VIEW_PARAMETERS, type ViewParameter } from './view.ts';

/**
 * A record's view facets from its list_entry row aliased `le` (the list's own columns; the event
 * trigger of migration view_states reads them the same way), for SQL over every record's current state.
 */
export const listEntryFacetsSql = (le: string): string =>
  `jsonb_build_object('status', ${le}.status, 'format', ${le}.format, 'language', ${le}.language, 'provider', ${le}.provider_name, 'topics', to_jsonb(${le}.topics), 'countries', to_jsonb(lower_each(${le}.countries)), 'cities', to_jsonb(lower_each(${le}.cities)))`;

/**
 * The SQL condition, per parameter, over a facets expression (jsonb, view_facets' shape) and the
 * parameter's values as SQL_VALUES makes them (a text[] expression). Countries and cities: the
 * facets are lower case already, the values are lowered as the list lowers them (lower_each,
 * migration places_any_case), once per statement, not per row.
 */
const SQL_CONDITIONS: Record<ViewParameter, (facets: string, values: string) => string> = {
  city: (f, v) => `(${f}->'cities') ?| ${v}`,
  country: (f, v) => `(${f}->'countries') ?| ${v}`,
  format: (f, v) => `(${f}->>'format') = any(${v})`,
  language: (f, v) => `(${f}->>'language') = any(${v})`,
  provider: (f, v) => `(${f}->>'provider') = any(${v})`,
  topic: (f, v) => `(${f}->'topics') ?| ${v}`,
};
const SQL_VALUES: Record<ViewParameter, (values: string) => string> = {
  city: (v) => `lower_each(${v})`,
  country: (v) => `lower_each(${v})`,
  format: (v) => v,
  language: (v) => v,
  provider: (v) => v,
  topic: (v) => v,
};
const publishedSql = (facets: string) => `(${facets}->>'status') = 'PUBLISHED'`;

/**
 * The view as a SQL condition over a facets expression (`view_facets(doc::jsonb)`, or a stored
 * facets column); `param` binds a value and returns its placeholder. True or false, never null: a
 * record without a value for a parameter (no language) is out, also where the condition is compared
 * rather than tested (a view change compares a record's membership in two views: null against
 * false sent a LEFT_VIEW for a record in neither).
 */
export function viewSql(view: View, facets: string, param: (value: readonly string[]) => string): string {
  const conditions = [publishedSql(facets)];
  for (const name of VIEW_PARAMETERS) {
    const values = view[name];
    if (values) conditions.push(SQL_CONDITIONS[name](facets, SQL_VALUES[name](`${param(values)}::text[]`)));
  }
  return `coalesce(${conditions.join(' and ')}, false)`;
}

/**
 * Any view, as one fixed SQL text (one prepared statement for every view): `viewValuesSql(first)`,
 * the select list of a one-row relation (alias it, e.g. `vv`) holding the view's values from the
 * placeholders `$first`.. (viewSqlValues, in VIEW_PARAMETERS order; null for a parameter the view
 * does not hold), prepared once per statement; `viewFacetsSql(facets, 'vv')`, the condition over a
 * facets expression that reads them.
 */
export const viewValuesSql = (first: number): string =>
  VIEW_PARAMETERS.map((name, i) => `${SQL_VALUES[name](`$${first + i}::text[]`)} as ${name}`).join(', ');

export function viewFacetsSql(facets: string, values: string): string {
  const conditions = VIEW_PARAMETERS.map(
    (name) => `(${values}.${name} is null or ${SQL_CONDITIONS[name](facets, `${values}.${name}`)})`,
  );
  return `(${[publishedSql(facets), ...conditions].join(' and ')})`;
}

/** The values of viewValuesSql's placeholders, in VIEW_PARAMETERS order. */
export const viewSqlValues = (view: View): (readonly string[] | null)[] =>
  VIEW_PARAMETERS.map((name) => view[name] ?? null);
