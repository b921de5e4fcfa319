// The feed's input, shared by REST and GraphQL: after (a cursor), limit 1..1000 (default 100) and,
// on REST, wait 0..30 seconds (default 0). Never clamped; every bad value is named (CONTRACT.md 2).
import { badInput, type InvalidParam } from '../kernel/errors.ts';
import { decodeCursor } from './cursor.ts';
import { FEED_LIMIT_DEFAULT, FEED_LIMIT_MAX, type FeedQuery } from './feed-reads.ts';

export const FEED_WAIT_MAX_SECONDS = 30;
const DIGITS = /^\d{1,15}$/;
const RANGES = { limit: [1, FEED_LIMIT_MAX], wait: [0, FEED_WAIT_MAX_SECONDS] } as const;
const reasonFor = (name: keyof typeof RANGES) => `must be an integer from ${RANGES[name][0]} to ${RANGES[name][1]}`;

function inRange(name: keyof typeof RANGES, value: number, problems: InvalidParam[]): number {
  if (!Number.isInteger(value) || value < RANGES[name][0] || value > RANGES[name][1])
    problems.push({ name, reason: reasonFor(name) });
  return value;
}

function cursorOrProblem(value: string, problems: InvalidParam[]): FeedQuery['after'] {
  const position = decodeCursor(value);
  if (!position)
    problems.push({ name: 'after', reason: 'is not a cursor of this feed (pass a `next` or head `cursor` unchanged)' });
  return position;
}

/** From raw query-string values (a repeated parameter arrives as an array). */
export function parseFeedQuery(query: Record<string, unknown>): FeedQuery & { waitSeconds: number } {
  const problems: InvalidParam[] = [];
  const once = (name: 'after' | 'limit' | 'wait'): string | undefined => {
    const raw = query[name];
    if (raw === undefined || typeof raw === 'string') return raw;
    problems.push({ name, reason: 'must be given at most once' });
    return undefined;
  };
  const number = (name: 'limit' | 'wait', fallback: number): number => {
    const raw = once(name);
    if (raw === undefined) return fallback;
    if (!DIGITS.test(raw)) {
      problems.push({ name, reason: reasonFor(name) });
      return fallback;
    }
    return inRange(name, Number(raw), problems);
  };
  const rawAfter = once('after');
  const after = rawAfter === undefined ? null : cursorOrProblem(rawAfter, problems);
  const limit = number('limit', FEED_LIMIT_DEFAULT);
  const waitSeconds = number('wait', 0);
  if (problems.length) throw badInput(problems);
  return { after, limit, waitSeconds };
}

/** From GraphQL arguments (already typed by GraphQL). */
export function parseFeedArgs(args: { after?: string | null; limit?: number | null }): FeedQuery {
  const problems: InvalidParam[] = [];
  const after = args.after === undefined || args.after === null ? null : cursorOrProblem(args.after, problems);
  const limit = inRange('limit', args.limit ?? FEED_LIMIT_DEFAULT, problems);
  if (problems.length) throw badInput(problems);
  return { after, limit };
}
