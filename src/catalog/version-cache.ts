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
import { createNotifiedCache, type NotifiedCache, type NotifiedCacheOptions } from '../db/notified-cache.ts';

export const CATALOG_CHANNEL = 'lods_catalog_changed'; // NOTIFYed by the triggers of migration catalog_notify

/** Record id -> the tag of the record as last read. */
export type VersionCache = NotifiedCache<string>;

export const createVersionCache = (options: NotifiedCacheOptions): VersionCache =>
  createNotifiedCache<string>(CATALOG_CHANNEL, options);
