// The live API keys this process has seen, so that a /v1 read is one round trip (the read) instead
// of a key look-up plus the read. A notified cache (db/notified-cache.ts: dropped on NOTIFY, nothing
// kept while not listening, a read overtaken by a notification not kept, `maxAgeMs` at most):
// - a trigger on api_key (migration api_key_notify) NOTIFYs every change, and each process drops
//   its whole cache when it hears it (keys change rarely), so a revocation applies in every
//   process within the notification's trip (milliseconds);
// - entries are filled from the primary, where revocations commit: a lagging replica cannot put a
//   revoked key back.
// Unknown keys are never cached (a flood of made-up keys cannot grow it); it holds at most
// `maxEntries` keys, by hash only.
import type { ListenSubscriber } from '../db/listen-connection.ts';
import { createNotifiedCache, type NotifiedCacheOptions } from '../db/notified-cache.ts';
import type { Queryable } from '../db/read-replicas.ts';
import { lookUpKey, type Principal } from './api-keys.ts';

export const API_KEY_CHANNEL = 'lods_api_key_changed'; // NOTIFYed by the trigger of migration api_key_notify

export type KeyCache = {
  /** The live key with this hash, or null. */
  principal: (keyHash: string) => Promise<Principal | null>;
  /** Calls `listener` when a key changes (revoked, its scopes changed) or notifications may have been missed, until the returned function is called. */
  onChange: (listener: () => void) => () => void;
  subscriber: ListenSubscriber;
};

/**
 * `primary` fills the cache; `fallback` (the read pool) answers while nothing may be cached (not
 * listening, or `maxAgeMs` 0: no cache).
 */
export function createKeyCache(
  deps: { primary: Queryable; fallback: Queryable },
  options: NotifiedCacheOptions,
): KeyCache {
  const cache = createNotifiedCache<Principal>(API_KEY_CHANNEL, options);
  const listeners = new Set<() => void>();
  const looking = new Map<string, { mark: number; lookup: Promise<Principal | null> }>();
  const changed = () => {
    for (const listener of listeners) listener();
  };
  return {
    async principal(keyHash) {
      if (!cache.enabled()) return lookUpKey(deps.fallback, keyHash);
      const hit = cache.get(keyHash);
      if (hit) return hit;
      // One look-up per key at a time (a key change makes every waiting long poll of a key ask at
      // once), shared only by those asking since the same notification: one started before it may
      // have read the key as it was.
      const mark = cache.mark();
      const pending = looking.get(keyHash);
      if (pending?.mark === mark) return pending.lookup;
      const lookup = lookUpKey(deps.primary, keyHash)
        .then((principal) => {
          if (principal) cache.keep(keyHash, principal, mark);
          return principal;
        })
        .finally(() => {
          if (looking.get(keyHash)?.lookup === lookup) looking.delete(keyHash);
        });
      looking.set(keyHash, { mark, lookup });
      return lookup;
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    // The cache hears first (it drops its keys), then the listeners look their keys up again.
    subscriber: {
      channel: cache.subscriber.channel,
      notified(payload) {
        cache.subscriber.notified(payload);
        changed();
      },
      listening(up) {
        cache.subscriber.listening(up);
        if (up) changed();
      },
    },
  };
}
