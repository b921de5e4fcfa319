// The nightly full walk (docs/contract.md, "REST v1"): page through the list by limit/offset until
// offset + page size reaches totalCount (or a page comes back empty), de-duplicating by id.
//
// A walk is best effort, not a snapshot: a record updated during the walk moves to the top of the
// list (updatedAt descending), which shifts the records after it one place down, so one of them is
// seen twice, and the updated record itself may be missed until the next walk (or a webhook event)
// brings it. Behind read replicas a page can even come from a replica that lags, so an older copy
// of a record can arrive after a newer one. The rule is therefore "latest copy wins": the copy with
// the highest updatedAt, and on a tie the copy seen later.
//
// Memory: the walk keeps an index of id -> (updatedAt, sequence number), about 150-200 bytes per
// record, and, unless `keepRecords: false`, the winning records themselves (the catalog's size in
// JSON several times over once parsed). For large catalogs, pass `keepRecords: false` and
// consume the pages through `onPage` (the CLI streams them to a file and keeps the winners by
// their sequence numbers, see src/consumer/walk.ts).
import type { CatalogClient, CallOptions } from './catalog-client.ts';
import type { LearningOpportunity, LearningOpportunityListParams } from './types.ts';

export type WalkProgress = {
  /** Pages read so far. */
  pages: number;
  /** Records received so far, duplicates included. */
  received: number;
  /** Distinct ids so far. */
  unique: number;
  /** totalCount of the last page. */
  totalCount: number;
};

export type WalkOptions = {
  client: Pick<CatalogClient, 'listLearningOpportunities'>;
  /** Page size, 1..100 (default 100, the service's maximum: fewest requests). */
  limit?: number;
  onProgress?: (progress: WalkProgress) => void;
  /**
   * Every page as it arrives, duplicates included. The n-th record received (counting from 0 over
   * the whole walk) has sequence number n: `records[i]` has `firstSeq + i`. Awaited, so a slow
   * consumer slows the walk down instead of piling pages up in memory.
   */
  onPage?: (records: readonly LearningOpportunity[], firstSeq: number) => void | Promise<void>;
  /** Keep the winning records in `result.records` (default true). */
  keepRecords?: boolean;
  /**
   * Page by `updatedAt` instead of by offset (default false): every page after the first asks for
   * the records updated before the last one read (`updatedBefore`). An offset walk misses a record
   * for every record archived or deleted above its position while it walks (the rest of the list
   * moves up one place), and a record that does not change again is not brought back by any
   * event; a keyset walk is not moved by removals above it, and a record updated meanwhile leaves
   * its range for the top of the list, where the feed that follows the walk brings it (sync). The
   * records of one instant (a bulk publish gives hundreds one updatedAt) are paged by offset among
   * themselves; an instant that spanned pages is read again at the end, so that none of its records
   * is missed for a removal among them meanwhile.
   * Needs a service with the list filters (docs/contract.md, "Filters, search, fields and facets").
   */
  keyset?: boolean;
  /** List filters sent with every page (a view's, see sync): the walk is of the records they find. */
  filter?: Omit<LearningOpportunityListParams, 'limit' | 'offset' | 'updatedBefore' | 'sort' | 'fields'>;
  signal?: AbortSignal;
};

/** Readings of an instant whose records spanned pages, at most, until one sees its count unchanged (rereadInstant). */
const INSTANT_READINGS = 5;

export type WalkEntry = { updatedAt: string; seq: number };

export type WalkResult = {
  /** The latest copy of every record, by id (empty with `keepRecords: false`). */
  records: Map<string, LearningOpportunity>;
  /** For every id: updatedAt and sequence number of the copy that won. */
  index: Map<string, WalkEntry>;
  /** Distinct records. */
  count: number;
  /** The highest updatedAt seen (null for an empty catalog): a watermark for later incremental reads. */
  highestUpdatedAt: string | null;
  pages: number;
  /** Records received, duplicates included. */
  received: number;
  /** Copies dropped because the same id was seen again. */
  duplicates: number;
};

export async function walk(options: WalkOptions): Promise<WalkResult> {
  const { client, limit = 100, onProgress, onPage, keepRecords = true, keyset = false, filter, signal } = options;
  if (!Number.isInteger(limit) || limit < 1)
    throw new RangeError(`walk: limit must be a positive integer, got ${limit}`);
  const call: CallOptions = signal ? { signal } : {};
  const records = new Map<string, LearningOpportunity>();
  const index = new Map<string, WalkEntry>();
  let highestUpdatedAt: string | null = null;
  let pages = 0;
  let received = 0;

  /** Takes a page's records into the index (and the records). */
  const take = async (results: readonly LearningOpportunity[]): Promise<void> => {
    pages++;
    await onPage?.(results, received);
    for (const record of results) {
      const seq = received++;
      if (highestUpdatedAt === null || compareTimestamps(record.updatedAt, highestUpdatedAt) > 0)
        highestUpdatedAt = record.updatedAt;
      const existing = index.get(record.id);
      // `>= 0`: on equal updatedAt the later-seen copy wins.
      if (existing && compareTimestamps(record.updatedAt, existing.updatedAt) < 0) continue;
      index.set(record.id, { updatedAt: record.updatedAt, seq });
      if (keepRecords) records.set(record.id, record);
    }
  };

  // Keyset: `bound` is just after the last record's updatedAt, and `offset` skips the records of
  // that same instant already read (the list is by updatedAt, then id, descending). Only records
  // sharing one millisecond are still paged by offset among themselves: `straddled` keeps the
  // instants whose records spanned pages, read again at the end (rereadInstant).
  let bound: string | null = null;
  let firstTotal: number | null = null;
  const straddled = new Set<string>();
  for (let offset = 0; ;) {
    const params = bound === null ? { ...filter, limit, offset } : { ...filter, limit, offset, updatedBefore: bound };
    const page = await client.listLearningOpportunities(params, call);
    const { results } = page;
    await take(results);
    const totalCount = page.pagination.totalCount;
    // A keyset page counts what is left of its range: progress shows the first page's count.
    firstTotal ??= totalCount;
    onProgress?.({ pages, received, unique: index.size, totalCount: keyset ? firstTotal : totalCount });
    // The empty page also ends a walk whose totalCount shrank or was wrong.
    if (results.length === 0 || offset + results.length >= totalCount) break;
    if (keyset) {
      const last = results[results.length - 1]!.updatedAt;
      const after = new Date(Date.parse(last) + 1).toISOString();
      let same = 0;
      while (same < results.length && results[results.length - 1 - same]!.updatedAt === last) same++;
      // Still inside the same instant (the whole page was it): skip what was read of it so far.
      offset = after === bound ? offset + results.length : same;
      bound = after;
      if (offset > 0) straddled.add(last);
      continue;
    }
    // From `next`: a page holds fewer than `limit` records before the end when its bytes reached
    // the service's PAGE_MAX_BYTES (a service without `next` steps by `limit`, never clamped).
    offset = page.pagination.next ?? offset + limit;
  }

  // The records of one instant are paged by offset among themselves: one removed (archived, deleted)
  // among those already read while the walk was inside the instant moves the rest up, and the next
  // page skips one. Such a record does not change, so no event brings it back (a bulk publish gives
  // hundreds of records one instant). So each instant that spanned pages is read again whole, until
  // a reading of it saw its count unchanged from first page to last: nothing moved under it.
  const rereadInstant = async (instant: string) => {
    const range = { ...filter, updatedSince: instant, updatedBefore: new Date(Date.parse(instant) + 1).toISOString() };
    for (let reading = 0; reading < INSTANT_READINGS; reading++) {
      const counts: number[] = [];
      for (let offset = 0; ;) {
        const page = await client.listLearningOpportunities({ ...range, limit, offset }, call);
        await take(page.results);
        counts.push(page.pagination.totalCount);
        if (page.results.length === 0 || offset + page.results.length >= page.pagination.totalCount) break;
        offset += page.results.length;
      }
      if (counts.every((n) => n === counts[0])) return;
    }
  };
  for (const instant of straddled) await rereadInstant(instant);

  return { records, index, count: index.size, highestUpdatedAt, pages, received, duplicates: received - index.size };
}

/** Orders two timestamps by time; unparseable ones fall back to string order (which equals time order for the v1 format). */
export function compareTimestamps(a: string, b: string): number {
  const ta = Date.parse(a);
  const tb = Date.parse(b);
  if (Number.isNaN(ta) || Number.isNaN(tb)) return a < b ? -1 : a > b ? 1 : 0;
  return ta - tb;
}
