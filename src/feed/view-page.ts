// The change feed of a view (GET /v1/events?view=, views/view.ts): the feed's pages (feed-reads.ts)
// with the view's filter applied in the page's statement, to the view facets stored with each event
// (event.view_before, view_after: migration view_states). Same horizon, cursors (of the view's own,
// cursor.ts), retention, byte bound and replica rules as the feed; a page's scan is bounded
// (VIEW_SCAN_MAX), so that a view whose events are rare still answers at once and moves on.
import type { QueryConfig } from 'pg';
import { PAGE_MAX_BYTES_DEFAULT, pageBudget } from '../catalog/read-model.ts';
import { cancelledWith } from '../db/deadline-reads.ts';
import type { CancellableReads } from '../db/queryable.ts';
import { renderLeftViewEvent } from '../views/left-view.ts';
import { type View, viewDigest } from '../views/view.ts';
import { viewFacetsSql, viewSqlValues, viewValuesSql } from '../views/view-sql.ts';
import { checkCursor, type FeedPage, type FeedQuery, type PageRow, SEPARATOR } from './feed-reads.ts';

/**
 * The most events one page of a view reads (its scan), matching or not: a view whose events are
 * rare still answers at once, with `next` past the events it passed over and `hasMore` while more
 * follow. A full scan read 20-55 ms on a 20,000-event feed of 4 kB bodies (a page of 1,000 matches,
 * their 3-4 MB of bodies included, 60-110 ms; the feed's own page of 1,000: 28-64 ms).
 */
export const VIEW_SCAN_MAX = 5000;
// A LEFT_VIEW item's size for the byte budget (its body, rendered in Node, is about 230 bytes).
const LEFT_VIEW_BYTES = 256;
// A LEFT_VIEW item as the statement hands it over: a unit separator (never in JSON text), then the
// event's id, occurred_at (epoch ms), resource id and version; renderLeftViewEvent makes its body.
const UNIT = '\x1f';

// In the view: the event's state after it; in before: the state before it, or an unknown one
// (events stored before views, whose previous event was gone: migration view_states).
// `vv`: the view's values ($6..$11, viewValuesSql), computed once for the statement (`offset 0`
// keeps the planner from copying lower_each(...) into the condition of every row).
const VIEW_AFTER = viewFacetsSql('e.view_after', 'vv');
const VIEW_BEFORE = `(e.view_before->>'status' = 'UNKNOWN' or ${viewFacetsSql('e.view_before', 'vv')})`;

/**
 * A page of a view's feed (GET /v1/events?view=): the feed's seek, the scan bounded by $5 events,
 * each event kept as it is when the record is in the view after it, as a LEFT_VIEW item when it was
 * in before and is not after (ARCHIVED and DELETED events stay as they are), passed over otherwise.
 * $6..$11: the view's values (views/view.ts, viewSqlValues). One pass over the scan (`k`: its
 * order, the running count and bytes of the matches), the bodies read only for the page's events.
 * seen: the events read (at most $5 + 1: one more says more follow); scanned: those within the
 * scan; matched: the scan's events of the view's feed; taken: those on the page ($3 at most, within
 * the byte budget $4); last_key: the last taken, scan_key: the last scanned.
 */
export const FEED_VIEW_PAGE_SQL = `
  with k as materialized (
    select x.*, row_number() over o as n, count(*) filter (where x.kind is not null) over o as m,
           sum(case when x.kind = 'left' then ${LEFT_VIEW_BYTES} else x.len + 1 end) filter (where x.kind is not null) over o as bytes
      from (select e.xid, e.position, e.id, e.resource_id, e.version, e.occurred_at, octet_length(e.body) as len,
                   case when e.view_after is not null and ${VIEW_AFTER} then 'as-is'
                        when e.view_before is not null and ${VIEW_BEFORE}
                          then case when e.type in ('LEARNING_OPPORTUNITY_ARCHIVED', 'LEARNING_OPPORTUNITY_DELETED')
                                    then 'as-is' else 'left' end
                   end as kind
              from event_feed_pruned w
             cross join (select ${viewValuesSql(6)} offset 0) vv
             cross join lateral (
               select * from event
                where (xid, position) > (coalesce($1::xid8, w.xid), coalesce($2::bigint, w.position))
                  and xid < pg_snapshot_xmin(pg_current_snapshot())
                order by xid, position
                limit $5::int + 1) e) x
    window o as (order by x.xid, x.position rows unbounded preceding)),
  t as (select k.* from k where k.kind is not null and k.n <= $5::int and k.m <= $3::int and (k.m = 1 or k.bytes <= $4::bigint)),
  c as (select count(*) as seen, count(*) filter (where k.n <= $5::int) as scanned,
               count(*) filter (where k.kind is not null and k.n <= $5::int) as matched,
               max(k.n) filter (where k.n <= $5::int) as scan_n
          from k)
  select w.xid::text as pruned_xid, w.position::text as pruned_position,
         ($1::xid8 is not null and ($1::xid8, $2::bigint) < (w.xid, w.position)) as expired,
         coalesce($1::xid8 >= pg_snapshot_xmax(pg_current_snapshot()), false) as ahead, pg_is_in_recovery() as replica,
         pg_snapshot_xmin(pg_current_snapshot())::text as horizon,
         c.seen, c.scanned, c.matched, p.taken, coalesce(p.bodies, '') as bodies, p.last_key,
         (select k.xid::text || '.' || k.position from k where k.n = c.scan_n) as scan_key,
         exists (select 1 from event f, lateral (select coalesce($1::xid8, w.xid) as x, coalesce($2::bigint, w.position) as p,
                                                         pg_snapshot_xmin(pg_current_snapshot()) as h) h
                  where (f.xid, f.position) > (greatest(h.x, h.h), case when h.x >= h.h then h.p else -1 end)) as pending
    from event_feed_pruned w, c,
         (select count(*) as taken,
                 string_agg(case when t.kind = 'left'
                                 then E'${UNIT}' || t.id || E'${UNIT}' || (extract(epoch from t.occurred_at) * 1000)::bigint
                                      || E'${UNIT}' || t.resource_id || E'${UNIT}' || t.version
                                 else b.body end, E'${SEPARATOR}' order by t.n) as bodies,
                 (array_agg(t.xid::text || '.' || t.position order by t.n desc))[1] as last_key
            from t left join event b on t.kind = 'as-is' and b.xid = t.xid and b.position = t.position) p`;

type ViewPageRow = Omit<PageRow, 'n' | 'taken'> & {
  seen: string;
  scanned: string;
  matched: string;
  taken: string;
  scan_key: string | null;
};
const viewPageStatement = (q: FeedQuery, view: View, maxBytes: number): QueryConfig => ({
  name: 'feed-view-page',
  text: FEED_VIEW_PAGE_SQL,
  values: [
    q.after?.xid ?? null,
    q.after?.position ?? null,
    q.limit,
    pageBudget(maxBytes),
    VIEW_SCAN_MAX,
    ...viewSqlValues(view),
  ],
});
/** A LEFT_VIEW item of the view statement as its body. */
function leftViewBody(item: string, view: View): string {
  const [id, ms, resourceId, version] = item.slice(1).split(UNIT);
  return renderLeftViewEvent(
    { id: id!, occurredAt: new Date(Number(ms)), resourceId: resourceId!, version: Number(version) },
    view,
  );
}

/**
 * A view's page. `next`: after the last event taken when more of the scan's matches follow it (the
 * page was full), else after the last event scanned (matching or not): the events passed over are
 * below the horizon, fixed, and none of them belongs to the view's feed. hasMore: matches of the scan
 * left over, or events past the scan.
 */
function presentViewPage(row: ViewPageRow | undefined, q: FeedQuery, view: View, digest: string): FeedPage {
  checkCursor(row);
  const taken = Number(row.taken);
  const start = q.after ?? { xid: row.pruned_xid, position: row.pruned_position };
  const more = taken < Number(row.matched);
  const key = more ? row.last_key : row.scan_key;
  const [xid, position] = key ? key.split('.') : [start.xid, start.position];
  return {
    results:
      taken === 0
        ? []
        : row.bodies.split(SEPARATOR).map((item) => (item.startsWith(UNIT) ? leftViewBody(item, view) : item)),
    after: q.after,
    start,
    next: { xid: xid!, position: position! },
    hasMore: more || Number(row.seen) > Number(row.scanned),
    pending: taken === 0 && row.pending,
    horizon: row.horizon,
    view: digest,
  };
}

export type ViewPages = ReturnType<typeof createViewPages>;

/** `pool`, `primary` and `pageMaxBytes` as for createFeedReads (feed-reads.ts). */
export function createViewPages(
  pool: CancellableReads,
  primary: CancellableReads,
  pageMaxBytes = PAGE_MAX_BYTES_DEFAULT,
) {
  return {
    /**
     * One page of the view's feed; `onPrimary`: read on the primary (a long poll woken by its NOTIFY);
     * `signal`: one request's (not a shared long poll's), which cancels the read when its client goes away.
     */
    async page(q: FeedQuery, view: View, onPrimary = false, signal?: AbortSignal): Promise<FeedPage> {
      const statement = viewPageStatement(q, view, pageMaxBytes);
      let row = (await cancelledWith(onPrimary ? primary : pool, signal).query<ViewPageRow>(statement)).rows[0];
      // A replica behind the cursor: the primary serves the read (as for the feed's pages).
      if (row?.ahead === true && row.replica)
        row = (await cancelledWith(primary, signal).query<ViewPageRow>(statement)).rows[0];
      return presentViewPage(row, q, view, viewDigest(view));
    },
  };
}
