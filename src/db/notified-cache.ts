// A per-process cache that is correct by invalidation, not by expiry: a trigger NOTIFYs every change
// of what it caches, and the process drops the entries named in the notification's payload (a
// comma-separated list of keys), or all of them for an empty payload. Used by the API key cache
// (auth/key-cache.ts) and the record version cache (catalog/version-cache.ts).
// - While the LISTEN connection is down (notifications would be missed) nothing is cached: `get`
//   misses and `keep` keeps nothing, so every request goes to the database, as without a cache.
// - A value read while a notification arrived is not kept (the generation moved): a slower, older
//   read can never undo an invalidation. Callers take `mark()` before their read and hand it to
//   `keep` after it.
// - No entry lives longer than `maxAgeMs`, the bound should the connection die without notice.
// - At most `maxEntries` entries; a full cache drops its oldest to make room.
import type { ListenSubscriber } from './listen-connection.ts';

export type NotifiedCacheOptions = { maxAgeMs: number; maxEntries: number; now?: () => number };

export type NotifiedCache<V> = {
  /** False when nothing may be cached (not listening, or the cache is configured off). */
  enabled: () => boolean;
  /** The live entry, or undefined. */
  get: (key: string) => V | undefined;
  /** Where invalidation stands, before a read whose result may be kept. */
  mark: () => number;
  /** Keeps `value` unless an invalidation arrived since `mark` (or nothing may be cached). */
  keep: (key: string, value: V, mark: number) => void;
  /** Drops these keys, as a notification naming them would (for changes this process made itself). */
  drop: (keys: readonly string[]) => void;
  subscriber: ListenSubscriber;
};

export function createNotifiedCache<V>(channel: string, options: NotifiedCacheOptions): NotifiedCache<V> {
  const now = options.now ?? Date.now;
  const configured = options.maxAgeMs > 0 && options.maxEntries > 0;
  const entries = new Map<string, { value: V; until: number }>();
  let listening = false;
  let generation = 0;
  const enabled = () => listening && configured;
  const drop = (keys: readonly string[]) => {
    generation++;
    for (const key of keys) entries.delete(key);
  };
  const invalidate = (payload: string) => {
    if (payload !== '') return drop(payload.split(','));
    generation++;
    entries.clear();
  };

  return {
    enabled,
    get(key) {
      const hit = entries.get(key);
      if (!hit) return undefined;
      if (hit.until > now()) return hit.value;
      entries.delete(key);
      return undefined;
    },
    mark: () => generation,
    keep(key, value, mark) {
      if (!enabled() || mark !== generation) return;
      // Oldest first (a Map keeps insertion order): a full cache makes room for the newcomer.
      if (!entries.delete(key) && entries.size >= options.maxEntries) entries.delete(entries.keys().next().value!);
      entries.set(key, { value, until: now() + options.maxAgeMs });
    },
    drop,
    subscriber: {
      channel,
      notified: invalidate,
      listening(up) {
        listening = up;
        invalidate('');
      },
    },
  };
}
