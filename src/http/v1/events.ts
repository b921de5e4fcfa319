// GET /v1/events (the change feed, docs/contract.md, "The change feed") and GET /v1/events/head, served on
// node:http by the dispatcher (dispatcher.ts) with the conventions of every /v1 endpoint: the key
// is checked first, before the input (401/403 before 400), under the key's rate limit (401/403
// before 429), HEAD is served by GET, other methods are 405, and both answer with an ETag derived
// from positions (a matching If-None-Match gets 304, after the key check). A long poll counts once
// against the limit; its re-reads at every wake-up re-check the key only (a key revoked while it
// waits gets 401).
// `view` (views/view.ts): the feed of a view, with cursors of its own (feed/cursor.ts); its head is
// the feed's head as a cursor of the view. A view's long poll moves its own start past the events
// its reads passed over (none of them belongs to the view), so that a wake-up reads only what is new.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ChangeFeed } from '../../feed/change-feed.ts';
import { encodeCursor, type FeedPosition } from '../../feed/cursor.ts';
import { parseFeedQuery, parseViewParameter } from '../../feed/feed-query.ts';
import { type FeedPage, feedPageVersion, renderFeedPage } from '../../feed/feed-reads.ts';
import { AppError, badInput, type InvalidParam } from '../../kernel/errors.ts';
import { viewDigest } from '../../views/view.ts';
import { readWithWait } from '../../feed/long-poll.ts';
import { sharedReads } from '../../feed/shared-reads.ts';
import { answerTurns, LONG_POLL_ANSWERS_PER_TURN } from '../../feed/answer-turns.ts';
import { heldTags, sendCacheable, tagOfVersion } from '../conditional.ts';
import { type Admission, recheckKey } from './admission.ts';
import { closedSignal } from '../closed-signal.ts';
import type { V1Serve } from './routes.ts';
import { parseQueryString } from '../../kernel/query-string.ts';

/** 200 with the body, or 304 when the client's If-None-Match holds this tag (the body is then never built). */
function answer(req: IncomingMessage, res: ServerResponse, tag: string, body: () => string): void {
  const held = heldTags(req.headers['if-none-match']);
  sendCacheable(res, tag, held === '*' || held?.includes(tag) ? null : body());
}

/** The feed and its head, as the dispatcher calls them (after admission: `at.principal` is the key's). */
export function eventEndpoints(deps: Admission & { feed: ChangeFeed }): { events: V1Serve; head: V1Serve } {
  const { reads, views, waiters } = deps.feed;
  const shared = sharedReads<FeedPage>();
  const turns = answerTurns(LONG_POLL_ANSWERS_PER_TURN);
  const positionKey = (p: FeedPosition | null) => (p ? `${p.xid}.${p.position}` : '-');
  // A shared read runs as the reads of the key whose request started it (its slots of the per-key
  // limits: db/key-connections.ts). When that key was refused a slot, another key's requests sharing
  // the read read on their own instead of answering with its 429: found from outside, a key that held
  // its two query slots made another key's long poll of the same view 429 after QUERY_QUEUE_WAIT_MS.
  const startedBy = new Map<string, string>();
  const sharedAsOwn = async (key: string, keyId: string, read: () => Promise<FeedPage>): Promise<FeedPage> => {
    const page = shared(key, () => {
      startedBy.set(key, keyId); // at once: the read starts in this call
      return read().finally(() => startedBy.delete(key));
    });
    const starter = startedBy.get(key) ?? keyId;
    try {
      return await page;
    } catch (error) {
      if (starter === keyId || !(error instanceof AppError) || error.code !== 'RATE_LIMITED') throw error;
      return read();
    }
  };

  const events: V1Serve = async (req, res, at) => {
    const query = parseFeedQuery(parseQueryString(at.query));
    // A client that goes away stops waiting (and frees its slot) at once, and a page read for this
    // request alone is cancelled in PostgreSQL; a long poll's read may be shared by several (below),
    // which one client's going must not stop for the others. `gone` also ends a wait whose key is refused.
    const closed = closedSignal(res);
    const gone = new AbortController();
    closed.addEventListener('abort', () => gone.abort(closed.reason), { once: true });
    // A long poll reads the primary: the NOTIFY that wakes it comes before a replica has the event.
    const onPrimary = query.waitSeconds > 0;
    const mine = onPrimary ? undefined : closed;
    let first = true;
    const { view } = query;
    // A view's re-reads start after what the previous read passed over; the answer still says the
    // client's `after` (and the first read's start), so that its next and ETag follow from them.
    let from = query.after;
    let firstStart: FeedPage['start'] | null = null;
    const read = async (): Promise<FeedPage> => {
      if (!first) await recheckKey(deps, req, 'catalog:read');
      first = false;
      // A long poll's read is shared with the identical ones of the same wake-up (shared-reads.ts);
      // any other read is its own, started after the request arrived.
      const same = `${waiters.wakeUps()}|${query.limit}|${positionKey(from)}`;
      const share = (key: string, read: () => Promise<FeedPage>) =>
        onPrimary ? sharedAsOwn(key, at.principal!.keyId, read) : read();
      if (view === null) return share(same, () => reads.page(query, onPrimary, mine));
      const page = await share(`${same}|${viewDigest(view)}`, () =>
        views.page({ after: from, limit: query.limit }, view, onPrimary, mine),
      );
      firstStart ??= page.start;
      from = page.next;
      return { ...page, after: query.after, start: firstStart };
    };
    // A key revoked (or stripped of its scope) while its long poll waits is answered 401/403 at once,
    // not at the next wake-up or the end of the wait (its slot was held up to 30 s). Only a refusal
    // ends the wait: a re-check that fails otherwise (the LISTEN connection's reconnect re-checks
    // every key, maybe before the database answers again) leaves it to the next read's own check. A
    // page read while a re-check runs waits for its verdict.
    let refused: unknown = null;
    let rechecks = Promise.resolve();
    const stopWatching = onPrimary
      ? deps.keys.onChange(() => {
          rechecks = Promise.all([
            rechecks,
            recheckKey(deps, req, 'catalog:read').catch((error: unknown) => {
              if (!isRefusal(error)) return;
              refused ??= error;
              gone.abort();
            }),
          ]).then(() => {});
        })
      : () => {};
    let page: FeedPage;
    try {
      page = await readWithWait(waiters, at.principal!.keyId, read, query.waitSeconds * 1000, gone.signal);
    } finally {
      stopWatching();
    }
    await rechecks;
    if (refused !== null) throw refused;
    // Many long polls woken by one commit answer a batch per turn of the event loop (answer-turns.ts).
    if (onPrimary) await turns.take();
    if (res.destroyed) return;
    answer(req, res, tagOfVersion(feedPageVersion(page, query.limit)), () => renderFeedPage(page, query.limit));
  };

  const head: V1Serve = async (req, res, at) => {
    const problems: InvalidParam[] = [];
    const view = parseViewParameter(parseQueryString(at.query), problems);
    if (problems.length) throw badInput(problems);
    const cursor = encodeCursor(await reads.head(), view ? viewDigest(view) : null);
    // The body is the cursor alone: the cursor identifies it.
    answer(req, res, tagOfVersion(cursor), () => JSON.stringify({ cursor }));
  };

  return { events, head };
}

/** A key's re-check that says no (revoked, expired, or without the scope), not one that could not ask. */
const isRefusal = (error: unknown): boolean =>
  error instanceof AppError && (error.code === 'UNAUTHENTICATED' || error.code === 'FORBIDDEN');
