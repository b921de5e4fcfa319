// Incremental sync over the change feed (docs/contract.md, "The change feed"): keeps a downstream copy of the
// public catalog current, deletions included.
//
//   first run (no state): take GET /v1/events/head, walk the whole list, store it with the head
//   later runs:           follow GET /v1/events from the stored cursor until hasMore is false
//   410 cursor-expired:   the stored cursor is older than the retained events: start over (head + walk)
//
// Events are applied in feed order: PUBLISHED and UPDATED upsert `data` by `resource.id`, ARCHIVED
// and DELETED remove the record. Events that change records the walk already saw in a newer state
// are applied too; the copy ends at the newest state because every later event follows.
//
// With `view` (a filter such as `format=IN_PERSON&country=DE`, the list's syntax restricted to format,
// language, topic, provider, country and city), the copy is of the view: the head of the view's
// feed, a walk of the list with the view's filters, then the view's feed, where a record that leaves
// the view comes as LEARNING_OPPORTUNITY_LEFT_VIEW (removed like ARCHIVED and DELETED). Its cursors
// serve only that view: a state kept for another view (or none) is refused with 400 naming `after`.
//
// Crash safety is the caller's `apply`: it must store each batch's changes durably, then the batch's
// cursor (the next run resumes from it), either at once or later together with the following
// batches, so long as a stored cursor is never ahead of the stored changes. Re-applying batches
// after a crash (between the two writes, or before batches kept in memory were stored) is harmless:
// upserts and removals are idempotent and arrive in the same order.
import type { CallOptions, CatalogClient } from './catalog-client.ts';
import { CatalogHttpError } from './errors.ts';
import { splitListValue } from './list-values.ts';
import type { CatalogEvent, LearningOpportunity } from './types.ts';
import { walk, type WalkOptions, type WalkProgress } from './walk.ts';

export type SyncState = { cursor: string };
export type SyncChange = { op: 'upsert'; id: string; record: LearningOpportunity } | { op: 'remove'; id: string };
/** `reset`: the changes are the whole catalog (a full walk); replace the copy with them. */
export type SyncBatch = { reset: boolean; changes: SyncChange[]; cursor: string };
export type SyncProgress = { phase: 'walk'; walk: WalkProgress } | { phase: 'feed'; events: number };

export type SyncOptions = {
  client: Pick<CatalogClient, 'listLearningOpportunities' | 'listEvents' | 'getEventsHead'>;
  /** What the last run stored; null (or absent) for the first run. */
  state?: SyncState | null;
  /**
   * Stores one batch durably (changes first, then its cursor), or keeps it to store with the next
   * ones (then store what was kept before the process ends). Awaited before the next batch. A batch
   * may hold no change: the cursor moved over events that change nothing here.
   */
  apply: (batch: SyncBatch) => Promise<void>;
  /** Events per feed page, 1..1000 (default 1000). */
  limit?: number;
  /** Keep a copy of this view only (see above); absent: the whole public catalog. */
  view?: string;
  onProgress?: (progress: SyncProgress) => void;
  signal?: AbortSignal;
};

export type SyncResult = {
  state: SyncState;
  /** full: the copy was rebuilt from a walk (first run or expired cursor); incremental: feed only. */
  mode: 'full' | 'incremental';
  /** True when a stored cursor had expired (410) and the run started over. */
  restarted: boolean;
  /** Records in the walk (full runs). */
  walked: number;
  /** Feed events applied. */
  events: number;
  upserts: number;
  removals: number;
};

const REMOVALS: ReadonlySet<string> = new Set([
  'LEARNING_OPPORTUNITY_ARCHIVED',
  'LEARNING_OPPORTUNITY_DELETED',
  'LEARNING_OPPORTUNITY_LEFT_VIEW',
]);

/**
 * What an event does to a copy; null for a type this client does not know (v1 may add event types,
 * and a client ignores the ones it does not know: docs/contract.md, "Versioning"). It was a removal,
 * so a new kind of event about a public record took that record out of the copy.
 */
export function changeOf(event: CatalogEvent): SyncChange | null {
  if (
    (event.type === 'LEARNING_OPPORTUNITY_PUBLISHED' || event.type === 'LEARNING_OPPORTUNITY_UPDATED') &&
    event.data
  ) {
    return { op: 'upsert', id: event.resource.id, record: event.data };
  }
  return REMOVALS.has(event.type) ? { op: 'remove', id: event.resource.id } : null;
}

const VIEW_PARAMETERS = ['city', 'country', 'format', 'language', 'provider', 'topic'] as const;

/** The list filters of a view (the list takes the same parameters); the service refuses any other one (at the head, before the walk). */
export function viewFilter(view: string): NonNullable<WalkOptions['filter']> {
  const params = new URLSearchParams(view);
  const filter: Record<string, string[]> = {};
  for (const name of VIEW_PARAMETERS) {
    const value = params.get(name);
    if (value !== null) filter[name] = splitListValue(value);
  }
  return filter as NonNullable<WalkOptions['filter']>;
}

const isExpired = (error: unknown) => error instanceof CatalogHttpError && error.status === 410;

export async function sync(options: SyncOptions): Promise<SyncResult> {
  const { client, apply, limit = 1000, onProgress, signal, view } = options;
  const call: CallOptions = signal ? { signal } : {};
  const result: SyncResult = {
    state: { cursor: options.state?.cursor ?? '' },
    mode: 'incremental',
    restarted: false,
    walked: 0,
    events: 0,
    upserts: 0,
    removals: 0,
  };

  // The head first, then the walk: whatever changes during or after the walk follows the head.
  const fullWalk = async (): Promise<string> => {
    result.mode = 'full';
    const { cursor } = await client.getEventsHead(call, view === undefined ? {} : { view });
    // By keyset: an offset walk misses records that move up when others are removed meanwhile, and
    // no event brings back a record that did not change.
    const walked = await walk({
      client,
      signal,
      keyset: true,
      ...(view === undefined ? {} : { filter: viewFilter(view) }),
      onProgress: (p) => onProgress?.({ phase: 'walk', walk: p }),
    });
    result.walked = walked.count;
    await apply({
      reset: true,
      changes: Array.from(walked.records.values(), (record) => ({ op: 'upsert', id: record.id, record })),
      cursor,
    });
    return cursor;
  };

  let cursor = options.state?.cursor || (await fullWalk());
  for (;;) {
    let page;
    try {
      page = await client.listEvents({ after: cursor, limit, ...(view === undefined ? {} : { view }) }, call);
    } catch (error) {
      if (!isExpired(error) || result.restarted) throw error;
      result.restarted = true;
      cursor = await fullWalk();
      continue;
    }
    const changes = page.results.map(changeOf).filter((c) => c !== null);
    // A page without a change still moves the cursor (a view's feed passes over the catalog's
    // other events): it is applied too, so that a quiet copy's stored cursor keeps up with the feed
    // and never falls behind its retention (it used to stay where the last change left it).
    if (page.pagination.next !== cursor) await apply({ reset: false, changes, cursor: page.pagination.next });
    if (changes.length > 0) {
      result.events += changes.length;
      for (const c of changes) result[c.op === 'upsert' ? 'upserts' : 'removals']++;
      onProgress?.({ phase: 'feed', events: result.events });
    }
    cursor = page.pagination.next;
    if (!page.pagination.hasMore) break;
  }
  result.state = { cursor };
  return result;
}
