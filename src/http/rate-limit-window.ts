// The sliding window of one key's admissions (http/rate-limit.ts): one-second buckets, what each
// counts and until when. Pure functions over a key's buckets; no I/O.

export const WINDOW_MS = 60_000;
export const BUCKET_MS = 1000;

export type Bucket = {
  /** Admitted here in this bucket. */
  mine: number;
  /** The part of `mine` already added to rate_limit_usage. */
  shared: number;
  /** All processes' count in this bucket as of the last sync (includes `shared`). */
  total: number;
  /** When this process last admitted a request in this bucket (0: never). */
  lastMine: number;
};

export type Usage = {
  keyId: string;
  /** By bucket start (ms). */
  buckets: Map<number, Bucket>;
};

export const bucketOf = (ms: number) => Math.floor(ms / BUCKET_MS) * BUCKET_MS;
export const countOf = (b: Bucket) => b.total + b.mine - b.shared;
/** Until when the bucket's requests count: 60 s after the last one (the bucket's end when another process admitted some). */
export const leavesAt = (start: number, b: Bucket) => (b.total > b.shared ? start + BUCKET_MS : b.lastMine) + WINDOW_MS;

/** Drops the buckets that left the window at `at`; returns the count of the others and when the first of them leaves. */
export function inWindow(u: Usage, at: number): { used: number; firstLeaves: number } {
  let used = 0;
  let firstLeaves = Infinity;
  for (const [start, b] of u.buckets) {
    const leaves = leavesAt(start, b);
    // A bucket with unshared requests stays until shared: the others must learn of them.
    if (leaves <= at) {
      if (b.mine === b.shared) u.buckets.delete(start);
      continue;
    }
    used += countOf(b);
    if (leaves < firstLeaves) firstLeaves = leaves;
  }
  return { used, firstLeaves };
}

/** Milliseconds from `at` until the count falls to `target` (or below); sorts, so only for refusals. */
export function untilCountIs(u: Usage, at: number, used: number, target: number): number {
  const live = [...u.buckets]
    .filter(([start, b]) => leavesAt(start, b) > at)
    .map(([start, b]) => ({ leaves: leavesAt(start, b), count: countOf(b) }));
  live.sort((a, b) => a.leaves - b.leaves);
  let left = used;
  for (const { leaves, count } of live) {
    left -= count;
    if (left <= target) return leaves - at;
  }
  return WINDOW_MS;
}
