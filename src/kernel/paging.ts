// limit/offset parsing shared by REST and GraphQL: never clamped, every bad value named; and the
// default bound of a page's bytes (the PAGE_MAX_BYTES setting, config-schema.ts; catalog/read-model.ts).
import { badInput, type InvalidParam } from './errors.ts';

export const PAGE_LIMIT_DEFAULT = 20;
export const PAGE_LIMIT_MAX = 100;
/** The largest offset (the OpenAPI document's maximum): 15 digits, exact as a JavaScript number. */
export const PAGE_OFFSET_MAX = 999_999_999_999_999;
/** PAGE_MAX_BYTES when unset: 8 MiB (docs/decisions.md, "Sizes of records and pages"). */
export const PAGE_MAX_BYTES_DEFAULT = 8 * 1024 * 1024;
const DIGITS = /^\d{1,15}$/;
const REASONS = {
  limit: `must be an integer from 1 to ${PAGE_LIMIT_MAX}`,
  offset: `must be an integer from 0 to ${PAGE_OFFSET_MAX}`,
};

function check(name: 'limit' | 'offset', value: number, problems: InvalidParam[]): void {
  if (name === 'limit' && (value < 1 || value > PAGE_LIMIT_MAX)) problems.push({ name, reason: REASONS.limit });
  if (name === 'offset' && (value < 0 || value > PAGE_OFFSET_MAX)) problems.push({ name, reason: REASONS.offset });
}

/** From raw query-string values (a repeated parameter arrives as an array). */
export function parsePagingQuery(query: Record<string, unknown>): { limit: number; offset: number } {
  const problems: InvalidParam[] = [];
  const read = (name: 'limit' | 'offset', fallback: number): number => {
    const raw = query[name];
    if (raw === undefined) return fallback;
    if (typeof raw !== 'string') {
      problems.push({ name, reason: 'must be given at most once' });
      return fallback;
    }
    if (!DIGITS.test(raw)) {
      problems.push({ name, reason: REASONS[name] });
      return fallback;
    }
    const value = Number(raw);
    check(name, value, problems);
    return value;
  };
  const limit = read('limit', PAGE_LIMIT_DEFAULT);
  const offset = read('offset', 0);
  if (problems.length) throw badInput(problems);
  return { limit, offset };
}

/** GraphQL's Int is 32-bit: an offset above it is refused by GraphQL itself (any page past the catalog's end is empty anyway). */
const GRAPHQL_INT_MAX = 2_147_483_647;

/** From GraphQL arguments (already typed Int by GraphQL). */
export function parsePagingArgs(args: { limit?: number | null; offset?: number | null }): {
  limit: number;
  offset: number;
} {
  const problems: InvalidParam[] = [];
  const limit = args.limit ?? PAGE_LIMIT_DEFAULT;
  const offset = args.offset ?? 0;
  check('limit', limit, problems);
  if (offset < 0) problems.push({ name: 'offset', reason: `must be an integer from 0 to ${GRAPHQL_INT_MAX}` });
  if (problems.length) throw badInput(problems);
  return { limit, offset };
}
