// The entity tag (doc_digest) of each published record this process has served, so that a
// conditional GET of one record whose tag the client holds is answered 304 without a round trip:
// the key comes from the key cache, the tag from here. A notified cache (db/notified-cache.ts):
// - a trigger on learning_opportunity (migration catalog_notify) NOTIFYs the ids of the records
//   each statement changed or deleted, whatever wrote them, and each process drops those; so a
//   change reaches every other process's answers within the notification's trip (milliseconds), as
//   a key revocation does; the process that wrote drops them as its transaction commits;
// - nothing is kept while the LISTEN connection is down, nor a read overtaken by a notification;
// - an entry lives at most `maxAgeMs`, the bound should that connection die unnoticed;
// - only records found (published) are kept: an unknown or unpublished id always reads the database.
// Off with read replicas: a replica replays a change after the primary's notification, and a read
// served by it could put back the version that notification retired.
import type { ListenSubscriber } from '../db/listen-connection.ts';
import { createNotifiedCache, type NotifiedCacheOptions } from '../db/notified-cache.ts';

export const CATALOG_CHANNEL = 'lods_catalog_changed'; // NOTIFYed by the triggers of migration catalog_notify

export type VersionCache = {
  /** The tag of the record as last read, or undefined. */
  tagOf: (id: string) => string | undefined;
  /** Takes a mark before a read whose tag may be kept (see `keep`). */
  mark: () => number;
  /** Keeps the tag read for `id` unless the record changed since `mark`. */
  keep: (id: string, tag: string, mark: number) => void;
  /** Drops records this process changed, once their transaction has committed. */
  drop: (ids: readonly string[]) => void;
  subscriber: ListenSubscriber;
};

export function createVersionCache(options: NotifiedCacheOptions): VersionCache {
  const cache = createNotifiedCache<string>(CATALOG_CHANNEL, options);
  return { tagOf: cache.get, mark: cache.mark, keep: cache.keep, drop: cache.drop, subscriber: cache.subscriber };
}
