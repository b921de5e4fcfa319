// The live API keys this process has seen, so that a /v1 read is one round trip (the read) instead
// of a key look-up plus the read. Correct by invalidation, not by expiry:
// - a trigger on api_key (migration api_key_notify) NOTIFYs every change, and each process drops
//   its whole cache when it hears it (keys change rarely), so a revocation applies in every
//   process within the notification's trip (milliseconds);
// - while the LISTEN connection is down (notifications would be missed) nothing is cached: every
//   request looks its key up, as without a cache;
// - a look-up that was under way when a change arrived is used for its request but not kept (the
//   generation moved), so a revocation can never be undone by a slower, older read;
// - entries are filled from the primary, where revocations commit: a lagging replica cannot put a
//   revoked key back;
// - no entry lives longer than `maxAgeMs`, the bound should a connection die without notice.
// Unknown keys are never cached (a flood of made-up keys cannot grow it); it holds at most
// `maxEntries` keys, by hash only.
import type { Pool } from 'pg';
import type { ListenSubscriber } from '../db/listen-connection.ts';
import type { Queryable } from '../db/read-replicas.ts';
import { lookUpKey, type Principal } from './api-keys.ts';

export const API_KEY_CHANNEL = 'lods_api_key_changed'; // NOTIFYed by the trigger of migration api_key_notify

export type KeyCache = {
  /** The live key with this hash, or null. */
  principal: (keyHash: string) => Promise<Principal | null>;
  subscriber: ListenSubscriber;
};

export type KeyCacheOptions = { maxAgeMs: number; maxEntries: number; now?: () => number };

/**
 * `primary` fills the cache; `fallback` (the read pool) answers while nothing may be cached (not
 * listening, or `maxAgeMs` 0: no cache).
 */
export function createKeyCache(deps: { primary: Pool; fallback: Queryable }, options: KeyCacheOptions): KeyCache {
  const now = options.now ?? Date.now;
  const entries = new Map<string, { principal: Principal; until: number }>();
  let listening = false;
  let generation = 0;
  const forget = () => {
    generation++;
    entries.clear();
  };

  return {
    async principal(keyHash) {
      if (!listening || options.maxAgeMs === 0) return lookUpKey(deps.fallback, keyHash);
      const hit = entries.get(keyHash);
      if (hit && hit.until > now()) return hit.principal;
      const seen = generation;
      const principal = await lookUpKey(deps.primary, keyHash);
      if (principal && seen === generation) {
        // Oldest first (a Map keeps insertion order): a full cache makes room for the newcomer.
        if (!hit && entries.size >= options.maxEntries) entries.delete(entries.keys().next().value!);
        entries.set(keyHash, { principal, until: now() + options.maxAgeMs });
      } else if (hit) entries.delete(keyHash);
      return principal;
    },
    subscriber: {
      channel: API_KEY_CHANNEL,
      notified: forget,
      listening(up) {
        listening = up;
        forget();
      },
    },
  };
}
