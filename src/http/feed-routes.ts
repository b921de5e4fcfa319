// GET /v1/events (the change feed, CONTRACT.md section 7) and GET /v1/events/head, with the
// conventions of the other /v1 reads (v1-reads.ts): the key is checked first, before the input
// (401/403 before 400), under the key's rate limit (401/403 before 429), HEAD is served by GET,
// other methods are 405, and both answer with an ETag derived from positions (a matching
// If-None-Match gets 304, after the key check). A long poll counts once against the limit; its
// re-reads at every wake-up re-check the key only (a key revoked while it waits gets 401).
import type { ServerResponse } from 'node:http';
import type { Request, Router } from 'express';
import type { Scope } from '../auth/api-keys.ts';
import { authenticate } from '../auth/bearer.ts';
import type { ChangeFeed } from '../feed/change-feed.ts';
import { encodeCursor } from '../feed/cursor.ts';
import { parseFeedQuery } from '../feed/feed-query.ts';
import { feedPageVersion, renderFeedPage } from '../feed/feed-reads.ts';
import { readWithWait } from '../feed/long-poll.ts';
import { heldTags, sendCacheable, tagOfVersion } from './conditional.ts';
import { exactRouter } from './exact-router.ts';
import { methodNotAllowed } from './problem.ts';
import { admit, type Admission } from './v1-reads.ts';

const SCOPE: Scope = 'catalog:read';

/** 200 with the body, or 304 when the client's If-None-Match holds this tag (the body is then never built). */
function answer(req: Request, res: ServerResponse, tag: string, body: () => string): void {
  const held = heldTags(req.get('if-none-match'));
  sendCacheable(res, tag, held === '*' || held?.includes(tag) ? null : body());
}

export function feedRouter(deps: Admission & { feed: ChangeFeed }): Router {
  const router = exactRouter();
  const onlyGet = methodNotAllowed(['GET', 'HEAD']);
  const { reads, waiters } = deps.feed;

  router.get('/events', async (req: Request, res) => {
    const principal = await admit(deps, req, res);
    const query = parseFeedQuery(req.query as Record<string, unknown>);
    // A client that goes away stops waiting (and frees its slot) at once.
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    // A long poll reads the primary: the NOTIFY that wakes it comes before a replica has the event.
    const onPrimary = query.waitSeconds > 0;
    let first = true;
    const read = async () => {
      if (!first) await authenticate(req.headersDistinct.authorization, SCOPE, deps.keys);
      first = false;
      return reads.page(query, onPrimary);
    };
    const page = await readWithWait(waiters, principal.keyId, read, query.waitSeconds * 1000, gone.signal);
    if (res.destroyed) return;
    answer(req, res, tagOfVersion(feedPageVersion(page, query.limit)), () => renderFeedPage(page, query.limit));
  });
  router.all('/events', onlyGet);

  router.get('/events/head', async (req: Request, res) => {
    await admit(deps, req, res);
    const cursor = encodeCursor(await reads.head());
    // The body is the cursor alone: the cursor identifies it.
    answer(req, res, tagOfVersion(cursor), () => JSON.stringify({ cursor }));
  });
  router.all('/events/head', onlyGet);

  return router;
}
