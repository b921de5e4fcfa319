// Wakes the worker when a retry it scheduled comes due, so that millisecond backoffs are honoured
// instead of waiting for the next poll. Due times are kept in 5 ms buckets, one timer for the
// earliest; retries scheduled by other processes are found by the poll. The timer does not keep the
// process alive (the worker's poll does while it runs): a retry or a receiver's pause (up to an hour)
// armed as the worker stops must not hold a stopped process open.
const BUCKET_MS = 5;

export function createRetryTimers(wake: () => void) {
  const due: number[] = []; // sorted bucket times, unique
  let timer: NodeJS.Timeout | null = null;
  let timerAt = Infinity;

  function arm(): void {
    const next = due[0];
    if (next === undefined || next >= timerAt) return;
    if (timer) clearTimeout(timer);
    timerAt = next;
    timer = setTimeout(fire, Math.max(0, next - Date.now()));
    timer.unref();
  }

  function fire(): void {
    timer = null;
    timerAt = Infinity;
    const now = Date.now();
    while (due.length > 0 && due[0]! <= now) due.shift();
    wake();
    arm();
  }

  return {
    wakeAt(at: number): void {
      const bucket = Math.ceil(at / BUCKET_MS) * BUCKET_MS;
      let lo = 0;
      let hi = due.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (due[mid]! < bucket) lo = mid + 1;
        else hi = mid;
      }
      if (due[lo] !== bucket) due.splice(lo, 0, bucket);
      arm();
    },
    clear(): void {
      if (timer) clearTimeout(timer);
      timer = null;
      timerAt = Infinity;
      due.length = 0;
    },
  };
}
