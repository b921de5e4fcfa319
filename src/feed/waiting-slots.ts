// The long polls' admission (feed-waiters.ts): how many requests of this process wait, in all and per
// API key, and the refusals past FEED_MAX_WAITERS (503) and FEED_MAX_WAITERS_PER_KEY (429).
import { AppError } from '../kernel/errors.ts';

export class WaitingSlots {
  #waiting = 0;
  readonly #perKey = new Map<string, number>();
  readonly #max: number;
  readonly #maxPerKey: number;

  constructor(max: number, maxPerKey: number) {
    this.#max = max;
    this.#maxPerKey = maxPerKey;
  }

  get waiting(): number {
    return this.#waiting;
  }

  /** Takes a slot for the key or throws 503 / 429; returns the release (a second call does nothing). */
  enter(keyId: string): () => void {
    if (this.#waiting >= this.#max) {
      throw new AppError(
        'SERVICE_UNAVAILABLE',
        `Too many requests are waiting for events on this server (FEED_MAX_WAITERS = ${this.#max}); retry shortly`,
        { headers: { 'Retry-After': '1' } },
      );
    }
    const ofKey = this.#perKey.get(keyId) ?? 0;
    if (ofKey >= this.#maxPerKey) {
      throw new AppError(
        'RATE_LIMITED',
        `This API key already has ${ofKey} requests waiting for events on this server (FEED_MAX_WAITERS_PER_KEY = ${this.#maxPerKey}); retry when one has been answered`,
        { headers: { 'Retry-After': '1' } },
      );
    }
    this.#waiting++;
    this.#perKey.set(keyId, ofKey + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.#waiting--;
      const rest = this.#perKey.get(keyId)! - 1;
      if (rest === 0) this.#perKey.delete(keyId);
      else this.#perKey.set(keyId, rest);
    };
  }
}
