// GET /v1/events (the change feed, CONTRACT.md section 7) and GET /v1/events/head, with the
// conventions of the other /v1 routes (v1-routes.ts): the key is checked in the same statement as
// the read and always before the input (401/403 before 400), HEAD is served by GET, other methods
// are 405. A long poll re-reads (and so re-checks the key) at every wake-up.
import type { Request, Router } from 'express';
import type { Pool } from 'pg';
import { presentedKey } from '../auth/bearer.ts';
import type { ChangeFeed } from '../feed/change-feed.ts';
import { encodeCursor } from '../feed/cursor.ts';
import { parseFeedQuery } from '../feed/feed-query.ts';
import { renderFeedPage } from '../feed/feed-reads.ts';
import { readWithWait } from '../feed/long-poll.ts';
import { exactRouter } from './exact-router.ts';
import { methodNotAllowed } from './problem.ts';
import { authorized, JSON_TYPE, parseAfterKey } from './v1-routes.ts';

const SCOPE = 'catalog:read';

export function feedRouter(deps: { pool: Pool; feed: ChangeFeed }): Router {
  const router = exactRouter();
  const onlyGet = methodNotAllowed(['GET', 'HEAD']);
  const { reads, waiters } = deps.feed;

  router.get('/events', async (req: Request, res) => {
    const key = presentedKey(req.get('authorization'));
    const query = await parseAfterKey(deps.pool, key, () => parseFeedQuery(req.query as Record<string, unknown>));
    // A client that goes away stops waiting (and frees its slot) at once.
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const page = await readWithWait(waiters, async () => authorized(req, await reads.withKey.page(key, SCOPE, query))!, query.waitSeconds * 1000, gone.signal);
    if (res.destroyed) return;
    res.setHeader('Content-Type', JSON_TYPE);
    res.send(renderFeedPage(page, query.limit));
  });
  router.all('/events', onlyGet);

  router.get('/events/head', async (req: Request, res) => {
    const key = presentedKey(req.get('authorization'));
    const head = authorized(req, await reads.withKey.head(key, SCOPE))!;
    res.setHeader('Content-Type', JSON_TYPE);
    res.send(JSON.stringify({ cursor: encodeCursor(head) }));
  });
  router.all('/events/head', onlyGet);

  return router;
}
