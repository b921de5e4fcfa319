// Which event ids a receiver has already taken. Delivery is at-least-once, so the same id can arrive
// again (retries after a lost response, operator redeliveries); the receiver claims an id before
// storing it and processes only what it claimed. Any implementation of SeenStore can be passed to
// webhookReceiver ({ dedupe }): a database table with a unique event id survives restarts.

export interface SeenStore {
  /** Claims `id`: true when it was not seen before (the caller owns it), false for a duplicate. Must be atomic. */
  claim(id: string): boolean | Promise<boolean>;
  /** Gives a claim back, e.g. when storing the event failed and the service must be able to retry it. */
  release(id: string): void | Promise<void>;
}

/**
 * The default: the last `maxEntries` ids in memory, oldest forgotten first. It does not survive a
 * restart and forgets very old ids, so processing must still be idempotent (an upsert by id is);
 * use a database-backed store (a unique index on the event id) for exactly-once side effects.
 */
export class MemorySeenStore implements SeenStore {
  readonly maxEntries: number;
  readonly #ids = new Set<string>();

  constructor(maxEntries = 100_000) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError('maxEntries must be a positive integer');
    this.maxEntries = maxEntries;
  }

  get size(): number {
    return this.#ids.size;
  }

  claim(id: string): boolean {
    if (this.#ids.has(id)) return false;
    this.#ids.add(id);
    // A Set iterates in insertion order: the first entry is the oldest.
    if (this.#ids.size > this.maxEntries) this.#ids.delete(this.#ids.values().next().value!);
    return true;
  }

  release(id: string): void {
    this.#ids.delete(id);
  }
}
