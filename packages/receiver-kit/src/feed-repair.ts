// Repairing gaps from the change feed: a receiver that missed deliveries (an outage longer than the
// retries, a dead letter nobody replayed) reads what it missed from GET /v1/events, whose items are
// the very bodies the webhooks carry (same event ids), and processes them with its usual handler.
//
//   const { cursor } = await repairFromFeed({ baseUrl, apiKey, lastEventId, handle: processEvent, dedupe });
//   // keep `cursor`; the next repair can start from it (`after: cursor`) instead of searching
//
// Starting from `lastEventId` (the last event the receiver processed) reads the retained feed from
// its start until that event and hands over everything after it; starting from a stored `after`
// cursor reads only what follows. If the starting point is no longer retained (EVENT_RETENTION_DAYS),
// a FeedGapError says so: the receiver must rebuild its copy from a full walk instead.
// A receiver subscribed to a view passes it (`view`): the repair then reads the feed of that view
// (GET /v1/events?view=), the same events its deliveries carry, LEFT_VIEW ones under the same ids.
// Self-contained like the rest of the kit: plain fetch, no service imports.
import { deliveryKind, type WebhookEvent } from './event.ts';
import type { SeenStore } from './seen-store.ts';
import { applyEvent, type VersionStore } from './version-store.ts';

export type FeedRepairOptions = {
  /** Base address of the service, without /v1. */
  baseUrl: string;
  /** An API key with the catalog:read scope. */
  apiKey: string;
  /** The last event the receiver processed; events after it are handed over. */
  lastEventId?: string;
  /** Or a cursor kept from an earlier repair (its `cursor`). */
  after?: string;
  /** Called for each missed event in feed order; awaited. */
  handle: (event: WebhookEvent) => Promise<void> | void;
  /** The receiver's seen store: events it already took are skipped (and the repaired ones claimed). */
  dedupe?: SeenStore;
  /**
   * The receiver's version store: an event not newer than the version held for its resource is not
   * handed over (counted in `stale`), and a handled one's version is recorded (applyEvent). Pass it
   * when live deliveries run beside the repair, so that neither overwrites the other's newer state.
   */
  versions?: VersionStore;
  /**
   * The receiver's view (as `receivers list` shows it, e.g. `country=de&format=ONLINE`): the feed of
   * that view is read, with LEARNING_OPPORTUNITY_LEFT_VIEW where a record left it (remove it from the
   * copy, as on DELETED). Omitted: the feed of every record.
   */
  view?: string;
  /** Events per page (default 1000, the service's maximum). */
  limit?: number;
  fetch?: typeof globalThis.fetch;
  signal?: AbortSignal;
};

/**
 * `skipped`: already seen (dedupe); `stale`: not newer than the version held (versions); `ignored`:
 * of an event type this kit does not know (v1 may add types; a receiver acknowledges and ignores them).
 */
export type FeedRepairResult = { cursor: string; handled: number; skipped: number; stale: number; ignored: number };

/** The starting point is not in the retained feed: rebuild from a full walk of the catalog. */
export class FeedGapError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FeedGapError';
  }
}

type Page = { results: unknown[]; pagination: { next: string; hasMore: boolean } };

export async function repairFromFeed(options: FeedRepairOptions): Promise<FeedRepairResult> {
  if (!options.lastEventId === !options.after)
    throw new TypeError('repairFromFeed: pass exactly one of lastEventId and after');
  const fetchFn = options.fetch ?? globalThis.fetch;
  const base = options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`;
  const readPage = async (after: string | null): Promise<Page> => {
    const url = new URL('v1/events', base);
    url.searchParams.set('limit', String(options.limit ?? 1000));
    if (after) url.searchParams.set('after', after);
    if (options.view !== undefined) url.searchParams.set('view', options.view);
    const res = await fetchFn(url, {
      headers: { authorization: `Bearer ${options.apiKey}`, accept: 'application/json' },
      redirect: 'manual',
      signal: options.signal,
    });
    if (res.status === 410)
      throw new FeedGapError(
        'the starting cursor is older than the retained events: rebuild the copy from a full walk',
      );
    if (res.status !== 200)
      throw new Error(`GET /v1/events answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    return (await res.json()) as Page;
  };

  let cursor: string | null = options.after ?? null;
  let found = options.lastEventId === undefined;
  const result: FeedRepairResult = { cursor: cursor ?? '', handled: 0, skipped: 0, stale: 0, ignored: 0 };
  for (;;) {
    const page = await readPage(cursor);
    for (const item of page.results) {
      const kind = deliveryKind(item);
      if (kind.kind === 'invalid') throw new Error(`the feed returned something that is not an event: ${kind.problem}`);
      const event = item as WebhookEvent;
      if (!found) {
        found = event.id === options.lastEventId;
        continue;
      }
      if (kind.kind === 'other') {
        result.ignored++;
        continue;
      }
      if (options.dedupe && !(await options.dedupe.claim(event.id))) {
        result.skipped++;
        continue;
      }
      try {
        if (options.versions) {
          if (!(await applyEvent(options.versions, event, options.handle)).applied) {
            result.stale++;
            continue;
          }
        } else {
          await options.handle(event);
        }
      } catch (error) {
        await options.dedupe?.release(event.id);
        throw error;
      }
      result.handled++;
    }
    cursor = page.pagination.next;
    result.cursor = cursor;
    if (!page.pagination.hasMore) break;
  }
  if (!found)
    throw new FeedGapError(
      `event ${options.lastEventId} is not in the retained feed: rebuild the copy from a full walk`,
    );
  return result;
}
