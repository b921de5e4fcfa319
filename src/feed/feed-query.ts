// The feed's input, shared by REST and GraphQL: after (a cursor), limit 1..1000 (default 100) and,
// on REST, wait 0..30 seconds (default 0) and view (a filter, views/view.ts: the feed of a view).
// Never clamped; every bad value is named. A cursor serves the feed it came from: a view's cursor
// only that view's feed, the feed's own cursors only the feed (400 naming `after` otherwise).
import { badInput, type InvalidParam } from '../kernel/errors.ts';
import { parseView, type View, viewDigest } from '../views/view.ts';
import { readCursor } from './cursor.ts';
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

/** `view`: the digest of the view whose feed is read (null: the feed itself); undefined: the view is invalid (its own 400). */
function cursorOrProblem(value: string, problems: InvalidParam[], view: string | null | undefined): FeedQuery['after'] {
  const cursor = readCursor(value);
  if (!cursor) {
    problems.push({ name: 'after', reason: 'is not a cursor of this feed (pass a `next` or head `cursor` unchanged)' });
    return null;
  }
  if (view === undefined || cursor.view === view) return cursor.position;
  problems.push({
    name: 'after',
    reason:
      cursor.view === null
        ? "is a cursor of the feed without a view, not of this view's feed: start from GET /v1/events/head with the same view (and a walk of the view's list)"
        : view === null
          ? "is a cursor of a view's feed: pass the same `view` with it"
          : "is a cursor of another view's feed: pass the view it came from, or start from GET /v1/events/head with this view",
  });
  return null;
}

/** The view of a request (its `view` parameter), or null; a bad one adds its problems (named `view`). */
export function parseViewParameter(query: Record<string, unknown>, problems: InvalidParam[]): View | null | undefined {
  const raw = query.view;
  if (raw === undefined) return null;
  if (typeof raw !== 'string') {
    problems.push({ name: 'view', reason: 'must be given at most once' });
    return undefined;
  }
  try {
    return parseView(raw, { as: 'view' });
  } catch (error) {
    const invalid = (error as { invalidParams?: InvalidParam[] }).invalidParams;
    if (!invalid) throw error;
    problems.push(...invalid);
    return undefined;
  }
}

/** From raw query-string values (a repeated parameter arrives as an array). `view`: null for the feed itself. */
export function parseFeedQuery(query: Record<string, unknown>): FeedQuery & { waitSeconds: number; view: View | null } {
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
  const view = parseViewParameter(query, problems);
  const rawAfter = once('after');
  const digest = view === undefined ? undefined : view === null ? null : viewDigest(view);
  const after = rawAfter === undefined ? null : cursorOrProblem(rawAfter, problems, digest);
  const limit = number('limit', FEED_LIMIT_DEFAULT);
  const waitSeconds = number('wait', 0);
  if (problems.length) throw badInput(problems);
  return { after, limit, waitSeconds, view: view ?? null };
}

/** From GraphQL arguments (already typed by GraphQL): the feed itself, no view. */
export function parseFeedArgs(args: { after?: string | null; limit?: number | null }): FeedQuery {
  const problems: InvalidParam[] = [];
  const after = args.after === undefined || args.after === null ? null : cursorOrProblem(args.after, problems, null);
  const limit = inRange('limit', args.limit ?? FEED_LIMIT_DEFAULT, problems);
  if (problems.length) throw badInput(problems);
  return { after, limit };
}
