// The change feed's reads, in plain SQL on the pool: one statement per page, served from the stored
// event bodies (the bytes webhook receivers get). Completeness in commit order comes from the
// horizon: only events whose transaction id is below pg_snapshot_xmin(pg_current_snapshot()) are
// read, so every transaction that could still add an event before the cursor has ended.
// On a hot standby the same holds: its snapshot counts every transaction id it has not seen end as
// running, and the statements call no function a standby refuses (pg_current_xact_id() is only the
// event.xid default, on the primary). A replica may be behind the cursor (taken on the primary or a
// replica further ahead): there the cursor looks `ahead`, and the read is re-run on the primary,
// which serves it (or rightly answers 400 for a cursor of another database).
import type { QueryConfig } from 'pg';
import { cancelledWith } from '../db/deadline-reads.ts';
import type { CancellableReads } from '../db/queryable.ts';
import { PAGE_MAX_BYTES_DEFAULT, pageBudget } from '../catalog/read-model.ts';
import { AppError, badInput } from '../kernel/errors.ts';
import { encodeCursor, type FeedPosition } from './cursor.ts';

export const FEED_LIMIT_DEFAULT = 100;
export const FEED_LIMIT_MAX = 1000;

/** `after` absent: from the oldest retained event. */
export type FeedQuery = { after: FeedPosition | null; limit: number };

export type FeedPage = {
  /** The stored event bodies, in feed order. */
  results: string[];
  after: FeedPosition | null;
  /** Where the page starts: `after`, or the prune watermark when the client gave none. */
  start: FeedPosition;
  next: FeedPosition;
  hasMore: boolean;
  /** True when events follow `next` that are not readable yet (an older transaction is still open). */
  pending: boolean;
  /** The horizon the read saw (the xid8 below which events are readable), for the long polls' shared re-check. */
  horizon: string;
  /** A view's page: the view's digest (its cursors carry it); absent for the feed itself. */
  view?: string;
};

// A record separator: it cannot occur in compact JSON text (JSON escapes control characters), so it
// splits the aggregated bodies back apart without parsing them.
export const SEPARATOR = '\x1e';

// Exported for bench/sync (EXPLAIN of the very statement the route runs).
export const FEED_PAGE_SQL = `
  select w.xid::text as pruned_xid, w.position::text as pruned_position,
         ($1::xid8 is not null and ($1::xid8, $2::bigint) < (w.xid, w.position)) as expired,
         coalesce($1::xid8 >= pg_snapshot_xmax(pg_current_snapshot()), false) as ahead, pg_is_in_recovery() as replica,
         pg_snapshot_xmin(pg_current_snapshot())::text as horizon,
         p.n, p.taken, p.bodies, p.last_key,
         -- Events after the cursor that are not readable yet: those at or past the horizon. One
         -- lower bound (the later of the cursor and the horizon), so the seek never walks the feed.
         exists (select 1 from event f, lateral (select coalesce($1::xid8, w.xid) as x, coalesce($2::bigint, w.position) as p,
                                                         pg_snapshot_xmin(pg_current_snapshot()) as h) c
                  where (f.xid, f.position) > (greatest(c.x, c.h), case when c.x >= c.h then c.p else -1 end)) as pending
    from event_feed_pruned w
   cross join lateral (
     -- n: the events read (at most $3 + 1); taken: those on the page, at most $3, and only while the
     -- bodies' running length stays within the byte budget $4 (the first is always taken): a page
     -- of big events stops early, and n > taken says more follow.
     select count(*) as n, count(*) filter (where e.taken) as taken,
            coalesce(string_agg(e.body, E'${SEPARATOR}' order by e.xid, e.position) filter (where e.taken), '') as bodies,
            (array_agg(e.xid::text || '.' || e.position order by e.xid desc, e.position desc) filter (where e.taken))[1] as last_key
       from (select xid, position, body, row_number() over w <= $3::int and (row_number() over w = 1 or sum(octet_length(body) + 1) over w <= $4::bigint) as taken
               from event
              where (xid, position) > (coalesce($1::xid8, w.xid), coalesce($2::bigint, w.position))
                and xid < pg_snapshot_xmin(pg_current_snapshot())
              window w as (order by xid, position rows unbounded preceding)
              order by xid, position
              limit $3::int + 1) e) p`;

// The newest readable event (below the horizon) past the prune watermark, and the watermark itself
// for an empty feed. (Events kept for a dead letter, see retention, sit below the watermark: never a head.)
const FEED_HEAD_SQL = `
  select w.xid::text as pruned_xid, w.position::text as pruned_position, h.xid::text as xid, h.position::text as position
    from event_feed_pruned w
    left join lateral (select xid, position from event
                        where xid < pg_snapshot_xmin(pg_current_snapshot()) and (xid, position) > (w.xid, w.position)
                        order by xid desc, position desc limit 1) h on true`;

export type PageRow = {
  pruned_xid: string;
  pruned_position: string;
  expired: boolean;
  ahead: boolean;
  replica: boolean;
  horizon: string;
  n: string;
  taken: string;
  bodies: string;
  last_key: string | null;
  pending: boolean;
};
type HeadRow = { pruned_xid: string; pruned_position: string; xid: string | null; position: string | null };

const pageStatement = (q: FeedQuery, maxBytes: number): QueryConfig => ({
  name: 'feed-page',
  text: FEED_PAGE_SQL,
  values: [q.after?.xid ?? null, q.after?.position ?? null, q.limit, pageBudget(maxBytes)],
});
const headStatement: QueryConfig = { name: 'feed-head', text: FEED_HEAD_SQL, values: [] };
const horizonStatement: QueryConfig = {
  name: 'feed-horizon',
  text: 'select pg_snapshot_xmin(pg_current_snapshot())::text as horizon',
  values: [],
};

export const cursorExpired = (): AppError =>
  new AppError(
    'CURSOR_EXPIRED',
    'This cursor points before the oldest retained event (events are pruned after EVENT_RETENTION_DAYS): start again from GET /v1/events/head and a full walk of /v1/learning-opportunities, then follow the feed from that head',
  );

/** Refuses a cursor the page's row says is expired (410) or ahead of the feed (400). */
export function checkCursor(row: { expired: boolean; ahead: boolean } | undefined): asserts row {
  if (!row) throw new Error('feed page statement returned no row'); // event_feed_pruned always has its row
  if (row.expired) throw cursorExpired();
  // No transaction has that id yet: the cursor comes from another database (or one restored from
  // an older backup); following it would silently skip events until the ids catch up.
  if (row.ahead)
    throw badInput([
      {
        name: 'after',
        reason:
          'is ahead of this feed (a cursor of another database?): start again from GET /v1/events/head and a full walk',
      },
    ]);
}

function presentPage(row: PageRow | undefined, q: FeedQuery): FeedPage {
  checkCursor(row);
  const count = Number(row.taken);
  const start = q.after ?? { xid: row.pruned_xid, position: row.pruned_position };
  const [xid, position] = row.last_key ? row.last_key.split('.') : [start.xid, start.position];
  return {
    results: count === 0 ? [] : row.bodies.split(SEPARATOR),
    after: q.after,
    start,
    next: { xid: xid!, position: position! },
    hasMore: Number(row.n) > count,
    pending: count === 0 && row.pending,
    horizon: row.horizon,
  };
}

function presentHead(row: HeadRow | undefined): FeedPosition {
  if (!row) throw new Error('feed head statement returned no row'); // event_feed_pruned always has its row
  return row.xid && row.position
    ? { xid: row.xid, position: row.position }
    : { xid: row.pruned_xid, position: row.pruned_position };
}

export type FeedReads = ReturnType<typeof createFeedReads>;

/**
 * `pool` serves the reads (a read replica when there are any, db/read-replicas.ts); `primary` serves
 * what a replica cannot: a cursor ahead of it, and `onPrimary` reads (a long poll, woken by the
 * primary's NOTIFY before a replica has replayed the event). `pageMaxBytes`: PAGE_MAX_BYTES, the
 * bound of a page's bytes (a page stops early, with `hasMore`, rather than grow past it).
 */
export function createFeedReads(
  pool: CancellableReads,
  primary: CancellableReads,
  pageMaxBytes = PAGE_MAX_BYTES_DEFAULT,
) {
  const behindCursor = (row: PageRow | undefined) => row?.ahead === true && row.replica;
  return {
    /**
     * One page; `onPrimary`: read on the primary (a long poll woken by the primary's NOTIFY);
     * `signal`: one request's (not a shared long poll's), which cancels the read when its client goes away.
     */
    async page(q: FeedQuery, onPrimary = false, signal?: AbortSignal): Promise<FeedPage> {
      const statement = pageStatement(q, pageMaxBytes);
      let row = (await cancelledWith(onPrimary ? primary : pool, signal).query<PageRow>(statement)).rows[0];
      if (behindCursor(row)) row = (await cancelledWith(primary, signal).query<PageRow>(statement)).rows[0];
      return presentPage(row, q);
    },
    /** The horizon on the primary (the long polls' shared re-check, feed-waiters.ts). */
    async horizon(): Promise<string> {
      return (await primary.query<{ horizon: string }>(horizonStatement)).rows[0]!.horizon;
    },
    /** The position of the newest readable event. */
    async head(): Promise<FeedPosition> {
      return presentHead((await pool.query<HeadRow>(headStatement)).rows[0]);
    },
  };
}

/**
 * What identifies a feed page's bytes, for its ETag (docs/contract.md, "Caching"): positions, never the bytes. The
 * events between `start` and `next` are fixed once read: they are below the horizon (every
 * transaction that could add one there has ended), stored bodies are never rewritten, and pruning
 * only removes events below the watermark (a page starting there moves its `start`; one whose
 * `after` falls below it is 410). So start, next and the count fix `results`, and with `after`
 * (given or not), `limit` and `hasMore` they fix every byte renderFeedPage writes.
 */
export function feedPageVersion(page: FeedPage, limit: number): string {
  const after = page.after ? 'after' : 'start';
  return `feed${page.view ? `.view.${page.view}` : ''}.${after}.${page.start.xid}.${page.start.position}.${page.next.xid}.${page.next.position}.${page.results.length}.${limit}.${page.hasMore}`;
}

/** The response body of GET /v1/events, assembled around the stored event bytes. */
export function renderFeedPage(page: FeedPage, limit: number): string {
  const view = page.view ?? null;
  const after = page.after ? JSON.stringify(encodeCursor(page.after, view)) : 'null';
  return `{"results":[${page.results.join(',')}],"pagination":{"limit":${limit},"after":${after},"next":${JSON.stringify(encodeCursor(page.next, view))},"hasMore":${page.hasMore}}}`;
}
