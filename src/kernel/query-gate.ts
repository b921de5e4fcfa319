// Admission for the query class: list reads with filters, search, facets, a projection or another
// sort, the reads whose cost a consumer chooses. Each takes one of its key's slots
// (QUERY_MAX_CONCURRENT_PER_KEY) and one of the process's (QUERY_MAX_CONCURRENT); a read that finds
// none waits in line at most QUERY_QUEUE_WAIT_MS, then is refused with 429 and Retry-After. One key
// can therefore never hold more than its share, and the query class never more than its own
// connections: the record, the plain list, the feed and writes use another pool and never wait here.
// A free slot goes to the waiting key that runs the fewest reads (among equals, the one waiting
// longest, counted from its first try refused since it last got a slot), so one key's queue, or
// several keys', never blocks another key's turn.
import { AppError } from './errors.ts';
import { queryGateRefused, queryGateRunning, queryGateWaiting } from './metrics.ts';

export type QueryGateLimits = { perKey: number; total: number; queueWaitMs: number };

export type QueryGate = {
  /** Resolves with the slot's release once admitted; rejects with 429 after the queue wait, or when `signal` aborts. */
  admit(keyId: string, signal?: AbortSignal): Promise<() => void>;
  /**
   * Runs `read` in a slot of `keyId`. The slot is held until `ended` resolves, when given: a read
   * answered at its deadline or on a disconnect may still be stopping in PostgreSQL, and the limits
   * hold for statements, not only for callers.
   */
  run<T>(keyId: string, read: () => Promise<T>, signal?: AbortSignal, ended?: () => Promise<void>): Promise<T>;
};

/** `since`: when it joined the line (performance.now()). */
type Waiter = { keyId: string; admitted: () => void; timer: NodeJS.Timeout | undefined; since: number };

// Keys remembered as refused (for their first refusal's wait) until they get a slot: this many at most.
const STARVED_KEYS_MAX = 10_000;

/** What a gate reports: its counts as they change, and the 429 of a read not admitted in time (keyFull: its key's limit was the full one). */
export type GateReporting = {
  running: (n: number) => void;
  waiting: (n: number) => void;
  refusal: (keyFull: boolean) => AppError;
};

/** The query class's: lods_query_running, lods_query_waiting, lods_query_refused_total. */
const queryClassReporting = (limits: QueryGateLimits): GateReporting => ({
  running: (n) => queryGateRunning.set(n),
  waiting: (n) => queryGateWaiting.set(n),
  refusal: (keyFull) => refusal(limits, keyFull),
});

/** `reporting`: the query class's by default; the per-key gate of the main pool's reads has its own (db/key-connections.ts). */
export function createQueryGate(
  limits: QueryGateLimits,
  reporting: GateReporting = queryClassReporting(limits),
): QueryGate {
  const perKey = new Map<string, number>();
  let running = 0;
  const line: Waiter[] = [];
  // Keys refused since they last got a slot: when the first of those tries joined the line.
  const starvedSince = new Map<string, number>();
  const waitingSince = (w: Waiter) => Math.min(w.since, starvedSince.get(w.keyId) ?? Infinity);

  const fits = (keyId: string) => running < limits.total && (perKey.get(keyId) ?? 0) < limits.perKey;
  const take = (keyId: string) => {
    starvedSince.delete(keyId);
    running++;
    perKey.set(keyId, (perKey.get(keyId) ?? 0) + 1);
    reporting.running(running);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      running--;
      const left = perKey.get(keyId)! - 1;
      if (left) perKey.set(keyId, left);
      else perKey.delete(keyId);
      reporting.running(running);
      serveLine();
    };
  };
  const leaveLine = (waiter: Waiter) => {
    const at = line.indexOf(waiter);
    if (at >= 0) line.splice(at, 1);
    clearTimeout(waiter.timer);
    reporting.waiting(line.length);
  };
  // A free slot goes to the waiter whose key runs the fewest reads: keys take turns. Served first
  // come, first served, three keys sending more than their two slots each (six wanted, five in the
  // process) kept a waiter of theirs always ahead of any other key's: found from outside, another
  // key's searches got 429 on 13 to 19 of 16 to 20 requests. Among equals, the key waiting longest,
  // its refused tries included: first come alone, keys whose clients retried together after each
  // 429 lined up in the same order every time, and the last key of that order got no slot in 20 s
  // (found from outside, 10 keys of 5 connections).
  function serveLine(): void {
    while (running < limits.total) {
      let next: Waiter | undefined;
      let fewest = limits.perKey;
      let oldest = Infinity;
      for (const waiter of line) {
        const n = perKey.get(waiter.keyId) ?? 0;
        if (n >= limits.perKey || n > fewest) continue;
        const since = waitingSince(waiter);
        if (n === fewest && since >= oldest) continue;
        next = waiter;
        fewest = n;
        oldest = since;
      }
      if (!next) return;
      leaveLine(next);
      next.admitted();
    }
  }

  function admit(keyId: string, signal?: AbortSignal): Promise<() => void> {
    if (line.length === 0 && fits(keyId)) return Promise.resolve(take(keyId));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        keyId,
        timer: undefined,
        since: performance.now(),
        admitted: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(take(keyId));
        },
      };
      const onAbort = () => {
        leaveLine(waiter);
        reject(signal!.reason as Error);
      };
      waiter.timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        leaveLine(waiter);
        if (starvedSince.size >= STARVED_KEYS_MAX) starvedSince.clear();
        starvedSince.set(keyId, waitingSince(waiter));
        reject(reporting.refusal((perKey.get(keyId) ?? 0) >= limits.perKey));
        serveLine(); // a refused head of the line may have held back others that fit
      }, limits.queueWaitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      line.push(waiter);
      reporting.waiting(line.length);
      serveLine();
    });
  }

  return { admit, run: (keyId, read, signal, ended) => runAdmitted(admit, keyId, read, signal, ended) };
}

/** QueryGate.run: `read` in a slot that `admit` gives, released when `ended` resolves (when given) or `read` settles. */
async function runAdmitted<T>(
  admit: QueryGate['admit'],
  keyId: string,
  read: () => Promise<T>,
  signal?: AbortSignal,
  ended?: () => Promise<void>,
): Promise<T> {
  const release = await admit(keyId, signal);
  try {
    return await read();
  } finally {
    if (ended) void ended().then(release, release);
    else release();
  }
}

/** The 429 of a read not admitted in time, naming the limit that was full. */
function refusal(limits: QueryGateLimits, keyFull: boolean): AppError {
  queryGateRefused.inc({ limit: keyFull ? 'key' : 'process' });
  const why = keyFull
    ? `this API key already runs ${limits.perKey} search, filter or facet requests at a time (QUERY_MAX_CONCURRENT_PER_KEY)`
    : `this server already runs ${limits.total} search, filter or facet requests at a time (QUERY_MAX_CONCURRENT)`;
  return new AppError('RATE_LIMITED', `Not admitted within ${limits.queueWaitMs} ms: ${why}; try again shortly`, {
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(limits.queueWaitMs / 1000))) },
  });
}
