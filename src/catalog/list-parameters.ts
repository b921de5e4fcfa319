// The query parameters of GET /v1/learning-opportunities beyond paging (docs/contract.md, "Filters"), read from
// the raw query string: every bad value is a 400 naming its parameter, all of them at once. Unknown
// parameters are ignored (forward compatibility), as everywhere in /v1.
import { badInput, type InvalidParam } from '../kernel/errors.ts';
import { FORMATS } from './record.ts';
import {
  canonicalLanguages,
  LIST_FACETS,
  LIST_SORTS,
  LIST_VALUES_MAX,
  type ListFilter,
  type ListQuery,
  RECORD_FIELDS,
  searchTextProblem,
} from './list-query.ts';

// RFC 3339 (the OpenAPI `date-time` format) with at most millisecond precision: the section 1 format
// (`2026-03-01T09:00:00.000Z`) and also without a fraction or with an offset.
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,3})?(Z|[+-]\d{2}:\d{2})$/;
const LIST_FILTERS = ['format', 'language', 'topic', 'provider', 'country', 'city'] as const;
const TIME_FILTERS = ['updatedSince', 'updatedBefore', 'startsFrom', 'startsBefore'] as const;
/** Every parameter read here (with limit and offset, the list's whole vocabulary). */
export const LIST_PARAMETERS = [...TIME_FILTERS, ...LIST_FILTERS, 'q', 'sort', 'fields', 'facets'] as const;

/** A valid timestamp as a Date, or null (a calendar date that does not exist is invalid too). */
export function parseTimestamp(text: string): Date | null {
  const m = TIMESTAMP.exec(text);
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  if (y! < 1) return null; // PostgreSQL has no year 0 (1 BC)
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) return null;
  // Date() rolls 2026-02-30 over into March; the fields as written must be a real time. Set field by
  // field: Date.UTC reads years 0-99 as 1900-1999.
  const check = new Date(0);
  check.setUTCFullYear(y!, mo! - 1, d!);
  check.setUTCHours(h!, mi!, s!);
  if (
    check.getUTCFullYear() !== y ||
    check.getUTCMonth() !== mo! - 1 ||
    check.getUTCDate() !== d ||
    check.getUTCHours() !== h ||
    check.getUTCMinutes() !== mi
  )
    return null;
  return date;
}

/**
 * The values of a comma-separated parameter. A comma inside a value is written `\,`, and a backslash
 * before a comma or another backslash `\\` (the provider "Acme, Inc." is `provider=Acme\, Inc.`,
 * sent as `Acme%5C%2C%20Inc.`); any other backslash stands for itself.
 */
export function splitValues(value: string): string[] {
  if (!value.includes('\\')) return value.split(',');
  const items: string[] = [];
  let current = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    const next = value[i + 1];
    if (c === '\\' && (next === ',' || next === '\\')) {
      current += next;
      i++;
    } else if (c === ',') {
      items.push(current);
      current = '';
    } else current += c;
  }
  items.push(current);
  return items;
}

/** `values` as one comma-separated parameter value that splitValues reads back (commas and backslashes escaped). */
export const joinValues = (values: readonly string[]): string =>
  values.map((v) => v.replace(/[\\,]/g, (c) => `\\${c}`)).join(',');

/**
 * Reads the list parameters from a parsed query string (node:querystring: a repeated parameter is
 * an array). Throws a 400 listing every bad one.
 */
export function parseListParameters(raw: Record<string, unknown>): ListQuery {
  const problems: InvalidParam[] = [];
  const one = (name: string): string | undefined => {
    const value = raw[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string') {
      problems.push({ name, reason: 'must be given at most once' });
      return undefined;
    }
    return value;
  };
  const list = (name: string, allowed?: readonly string[]): string[] | undefined => {
    const value = one(name);
    if (value === undefined) return undefined;
    const items = splitValues(value);
    if (items.some((item) => item === ''))
      problems.push({ name, reason: 'must be a comma-separated list of non-empty values' });
    else if (items.length > LIST_VALUES_MAX)
      problems.push({ name, reason: `must hold at most ${LIST_VALUES_MAX} values` });
    // PostgreSQL text cannot hold NUL: such a value would fail the statement (a 500), not match.
    else if (items.some((item) => item.includes('\u0000')))
      problems.push({ name, reason: 'must not contain NUL characters' });
    else if (allowed && items.some((item) => !allowed.includes(item)))
      problems.push({ name, reason: `must be among ${allowed.join(', ')}` });
    else return [...new Set(items)];
    return undefined;
  };

  const filter: ListFilter = {};
  for (const name of TIME_FILTERS) {
    const value = one(name);
    if (value === undefined) continue;
    const date = parseTimestamp(value);
    if (date) filter[name] = date;
    else problems.push({ name, reason: 'must be a timestamp such as 2026-03-01T09:00:00.000Z' });
  }
  // Languages as the catalog stores them (canonical BCP 47: `DE` is `de`); countries and cities are
  // compared in lower case by the statement (catalog/list-sql.ts); the others exactly.
  for (const name of LIST_FILTERS) {
    const values = list(name, name === 'format' ? FORMATS : undefined);
    if (values) filter[name] = name === 'language' ? canonicalLanguages(values) : values;
  }
  const q = one('q') ?? null;
  const qProblem = q === null ? null : searchTextProblem(q);
  if (qProblem) problems.push({ name: 'q', reason: qProblem });
  const sort = one('sort') ?? '-updatedAt';
  if (!(LIST_SORTS as readonly string[]).includes(sort))
    problems.push({ name: 'sort', reason: `must be one of ${LIST_SORTS.join(', ')}` });
  else if (sort === 'relevance' && q === null) problems.push({ name: 'sort', reason: 'relevance needs q' });
  const fields = list('fields', RECORD_FIELDS) ?? null;
  const facets = list('facets', LIST_FACETS) ?? [];
  if (problems.length) throw badInput(problems);
  return {
    filter,
    q,
    sort: sort as ListQuery['sort'],
    fields: fields as ListQuery['fields'],
    facets: facets as ListQuery['facets'],
  };
}
