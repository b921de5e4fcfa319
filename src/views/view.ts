// Views: a filter of the public catalog written in the list's own query-string syntax
// (GET /v1/learning-opportunities), restricted to `format`, `language`, `topic`, `provider`,
// `country` and `city`, with the list's semantics: the values of one parameter are alternatives,
// different parameters must all hold; languages are canonical BCP 47 tags; countries and cities are
// free text compared in lower case (PostgreSQL's lower(), the list's lower_each) and match any
// session's location; only PUBLISHED records are in a view (an ARCHIVED state is out of every one).
// Everything else in a view is refused, naming it.
//
// One membership rule, in two spellings over one shape: a record's *view facets* (viewFacets here;
// in SQL view_facets() and the facets the event trigger reads off list_entry, migration view_states:
// equal as sets for every record, test/views/view-oracle.test.ts), and `facetsInView` /
// `viewFacetsSql` over them (view-sql.ts). The change feed of a view (feed/view-page.ts) evaluates
// the SQL spelling on the facets stored with each event (event.view_before, view_after); the webhook
// fan-out evaluates facetsInView on the same stored facets (webhooks/delivery/view-routing.ts);
// inView is the same rule over a record's public JSON rendering.
//
// Enter/stay/leave: for an event, the record's view state before it (view_before) and after it
// (view_after, null for DELETED): in after -> the event as it is (stay or enter); in before and out
// after -> the event as it is when ARCHIVED or DELETED, otherwise LEARNING_OPPORTUNITY_LEFT_VIEW
// (data null, same resource and version, an id derived from the event's and the view's: left-view.ts);
// out and out -> not in the view's feed (viewEventKind).
import { createHash } from 'node:crypto';
import { joinValues, parseListParameters } from '../catalog/list-parameters.ts';
import { parseQueryString } from '../kernel/query-string.ts';
import { AppError, badInput, type InvalidParam } from '../kernel/errors.ts';

/** The parameters a view may hold, in canonical order (sorted). */
export const VIEW_PARAMETERS = ['city', 'country', 'format', 'language', 'provider', 'topic'] as const;
export type ViewParameter = (typeof VIEW_PARAMETERS)[number];

/**
 * A parsed view: each parameter given, its values distinct and sorted (code points); languages
 * canonical, countries and cities in lower case. Made by parseView only.
 */
export type View = Readonly<Partial<Record<ViewParameter, readonly string[]>>>;

/** The facets of one record state that views read; null for no state (absent, deleted). */
export type ViewFacets = {
  status: string | null;
  format: string | null;
  language: string | null;
  provider: string | null;
  /** Distinct, sorted here (SQL keeps the order and repeats it finds: a view only asks membership). */
  topics: string[];
  /** The sessions' countries and cities, in lower case (pgLower), distinct, sorted here. */
  countries: string[];
  cities: string[];
};

// Code point order (PostgreSQL's C.UTF-8 sort); UTF-16 order differs around surrogates.
const codePoints = (a: string, b: string): number => {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
};
const sortedDistinct = (values: Iterable<string>): string[] => [...new Set(values)].sort(codePoints);

/**
 * PostgreSQL's lower() under the cluster's builtin C.UTF-8 locale (db/cluster-password.ts): the
 * simple Unicode lower-case mapping. JavaScript's toLowerCase is the full one (`İ` becomes `i` +
 * U+0307, a final `Σ` `ς`); per code point, with İ mapped to `i`, it is the simple one.
 */
export function pgLower(text: string): string {
  let out = '';
  for (const ch of text) out += ch === '\u0130' ? 'i' : ch.toLowerCase();
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** A record state's view facets, from its public JSON rendering (parsed); null when there is none. */
export function viewFacets(record: unknown): ViewFacets | null {
  if (!isObject(record)) return null;
  const sessions = Array.isArray(record.sessions) ? record.sessions : [];
  const places = (key: 'country' | 'city') =>
    sortedDistinct(
      sessions.flatMap((s: unknown) => {
        const value = isObject(s) && isObject(s.location) ? text(s.location[key]) : null;
        return value === null ? [] : [pgLower(value)];
      }),
    );
  return {
    status: text(record.status),
    format: text(record.format),
    language: text(record.language),
    provider: isObject(record.provider) ? text(record.provider.name) : null,
    topics: sortedDistinct(Array.isArray(record.topics) ? record.topics.filter((t) => typeof t === 'string') : []),
    countries: places('country'),
    cities: places('city'),
  };
}

const anyOf = (wanted: readonly string[] | undefined, value: string | null) =>
  wanted === undefined || (value !== null && wanted.includes(value));
const overlaps = (wanted: readonly string[] | undefined, values: readonly string[]) =>
  wanted === undefined || values.some((v) => wanted.includes(v));

/** Whether a state with these facets is in the view (null: no state, out). */
export function facetsInView(view: View, facets: ViewFacets | null): boolean {
  return (
    facets !== null &&
    facets.status === 'PUBLISHED' &&
    anyOf(view.format, facets.format) &&
    anyOf(view.language, facets.language) &&
    anyOf(view.provider, facets.provider) &&
    overlaps(view.topic, facets.topics) &&
    overlaps(view.country, facets.countries) &&
    overlaps(view.city, facets.cities)
  );
}

/**
 * Whether a stored state before an event (event.view_before) may have been in the view: in it, or
 * unknown (`{"status":"UNKNOWN"}`: events stored before views whose previous event was gone,
 * migration view_states), which counts as in, so that a record going out is told it left.
 */
export function beforeInView(view: View, facets: ViewFacets | null): boolean {
  return facets?.status === 'UNKNOWN' || facetsInView(view, facets);
}

/** THE evaluator: whether a record (its public JSON rendering, parsed: a doc or an event's data; null: none) is in the view. */
export function inView(view: View, record: unknown): boolean {
  return facetsInView(view, viewFacets(record));
}

/** How an event shows in a view's feed: as it is, as a LEFT_VIEW event, or not at all. */
export type ViewEventKind = 'as-is' | 'left' | null;

/** `before`/`after`: the record's states around the event (after: null for DELETED), as facets. */
export function viewEventKind(
  view: View,
  type: string,
  before: ViewFacets | null,
  after: ViewFacets | null,
): ViewEventKind {
  if (facetsInView(view, after)) return 'as-is';
  if (!beforeInView(view, before)) return null;
  return type === 'LEARNING_OPPORTUNITY_ARCHIVED' || type === 'LEARNING_OPPORTUNITY_DELETED' ? 'as-is' : 'left';
}

const VIEW_REASON = `is not a view parameter (a view takes only ${VIEW_PARAMETERS.join(', ')})`;

/**
 * Parses a view (`format=IN_PERSON&country=DE`: a query string, values comma-separated as in the list).
 * Throws a 400 listing every problem, by the view's own parameter names or, with `as` (the request
 * parameter that carried the view), all under that name.
 */
export function parseView(textOfView: string, options: { as?: string } = {}): View {
  const rename = (list: InvalidParam[]): InvalidParam[] =>
    options.as === undefined ? list : list.map((p) => ({ name: options.as!, reason: `${p.name} ${p.reason}` }));
  let raw: Record<string, unknown>;
  try {
    raw = parseQueryString(textOfView);
  } catch (error) {
    if (error instanceof AppError && error.invalidParams) throw badInput(rename(error.invalidParams));
    throw error;
  }
  if (Object.keys(raw).length === 0)
    throw badInput([{ name: options.as ?? 'view', reason: `must hold at least one of ${VIEW_PARAMETERS.join(', ')}` }]);
  const problems: InvalidParam[] = [];
  const given: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(raw)) {
    if ((VIEW_PARAMETERS as readonly string[]).includes(name)) given[name] = value;
    else problems.push({ name, reason: VIEW_REASON });
  }
  let filter: Record<string, string[] | undefined> = {};
  try {
    filter = parseListParameters(given).filter as Record<string, string[] | undefined>;
  } catch (error) {
    if (!(error instanceof AppError && error.invalidParams)) throw error;
    problems.push(...error.invalidParams);
  }
  if (problems.length) throw badInput(rename(problems));
  const view: Partial<Record<ViewParameter, readonly string[]>> = {};
  for (const name of VIEW_PARAMETERS) {
    const values = filter[name];
    if (values === undefined) continue;
    view[name] = sortedDistinct(name === 'country' || name === 'city' ? values.map(pgLower) : values);
  }
  return view;
}

/**
 * The canonical text of a view: its parameters in VIEW_PARAMETERS order, each value percent-encoded,
 * distinct and sorted; equal views have equal text. It is itself a view and a list query string
 * (`GET /v1/learning-opportunities?<canonical>` lists the view's records).
 */
export function canonicalView(view: View): string {
  return VIEW_PARAMETERS.filter((name) => view[name] !== undefined)
    .map((name) => `${name}=${encodeURIComponent(joinValues(view[name]!)).replaceAll('%2C', ',')}`)
    .join('&');
}

/** 16 hex digits of the SHA-256 of the canonical text: what a view's feed cursors carry. */
export function viewDigest(view: View): string {
  return createHash('sha256').update(canonicalView(view)).digest('hex').slice(0, 16);
}
