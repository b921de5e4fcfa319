// A generic cell rate algorithm on bytes, per key: a key may spend `bytesPerSecond` on average, with
// bursts up to `burstBytes`. One instant per key (`paidUntil`): n bytes cost n / rate seconds. What
// the bytes are is its users' business: the GraphQL request bodies (graphql/body-pacing.ts) and the
// answers sent (http/response-pacing.ts), each with a pace of its own.

/** Whatever would wait longer than this is refused instead. */
export const MAX_WAIT_MS = 10_000;

export type BytePace = ReturnType<typeof createBytePace>;

export function createBytePace(options: { bytesPerSecond: number; burstBytes: number; now?: () => number }) {
  const now = options.now ?? performance.now.bind(performance);
  const msPerByte = 1000 / options.bytesPerSecond;
  const burstMs = options.burstBytes * msPerByte;
  // keyId -> the instant until which the key's earlier bytes are paid for.
  const paidUntil = new Map<string, number>();

  /** When the key's bytes so far and `bytes` more are paid for, seen at `t`. */
  const paidWith = (keyId: string, bytes: number, t: number) =>
    Math.max(paidUntil.get(keyId) ?? t, t) + bytes * msPerByte;

  const forget = () => {
    const t = now();
    for (const [keyId, until] of paidUntil) if (until <= t) paidUntil.delete(keyId);
  };

  return {
    /** Reserves `bytes` for the key: how long they must wait, or null when that is over `maxWaitMs` (nothing reserved). */
    reserve(keyId: string, bytes: number, maxWaitMs = MAX_WAIT_MS): number | null {
      const t = now();
      if (paidUntil.size > 10_000) forget();
      const until = paidWith(keyId, bytes, t);
      const wait = Math.max(0, until - t - burstMs);
      // The tolerance: a body of exactly the burst and MAX_WAIT_MS of pace (the largest the settings
      // allow, config.ts) came out a hair over it in floating point, and was refused every time.
      if (wait > maxWaitMs + 1e-6) return null;
      paidUntil.set(keyId, until);
      return wait;
    },
    /** Charges `bytes` just read (a chunk of a body without Content-Length; negative: gives back part of a reservation, never below now): how long the key's reading must now pause, 0 while within the burst. */
    charge(keyId: string, bytes: number): number {
      const t = now();
      if (paidUntil.size > 10_000) forget();
      const until = Math.max(t, paidWith(keyId, bytes, t));
      paidUntil.set(keyId, until);
      return Math.max(0, until - t - burstMs);
    },
    /** How long the key's bodies must wait before they are read (its debt past the burst), reserving nothing. */
    owedMs(keyId: string): number {
      const t = now();
      return Math.max(0, paidWith(keyId, 0, t) - t - burstMs);
    },
    /** How long until `bytes` would be read without refusal (for Retry-After). */
    retryAfterMs(keyId: string, bytes: number): number {
      const t = now();
      return Math.max(0, paidWith(keyId, bytes, t) - t - burstMs - MAX_WAIT_MS);
    },
  };
}
