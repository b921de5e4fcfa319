// Per-receiver concurrency and prefetch, in the worker's memory.
//
// At most WEBHOOK_CONCURRENCY_PER_RECEIVER requests go to one receiver at a time. Behind them, a
// receiver keeps a short local queue of fetched jobs, so that a fast receiver is fed without a
// database round trip per delivery. The queue is sized from the receiver's recent response times
// so that no job waits longer than `budgetMs` (an unknown receiver gets a small one, a slow one
// none), and a receiver that times out or fails to connect hands its queue back at once: nothing
// waits in memory while its job's expiry runs. Jobs beyond a receiver's room are handed back by the
// caller (restored to the queue; that does not count as a retry).
//
// In the database, pg-boss groupConcurrency (group = receiver id) caps one receiver's jobs in
// progress across all workers at `groupFactor` (WEBHOOK_GROUP_FACTOR) times the per-receiver limit
// (in progress: fetched, queued here or being sent; the fetching worker adds the attempts it is
// still recording, which are active jobs until their settlement commits).
//
// A receiver that asked to be left alone (a 429 or 503 with Retry-After, retry-policy.ts) is paused
// until then: its queued jobs are taken out (the caller hands them back deferred, receiver-pauses.ts),
// nothing of it is accepted (not even a lane's claimed next delivery), and it is among the receivers
// left out of fetches. Requests already on the wire are not recalled.
//
// A receiver with a rate cap (receiver.max_per_second, receivers/rate-cap.ts) gets a queue no longer
// than its cap sends in `budgetMs` (at least 1): its jobs wait for send tokens (rate-gate.ts) at that
// pace, and what it cannot send soon stays in the database queue, where a LATEST_STATE receiver's
// newer events replace the waiting ones. `next` takes a receiver's job only when `ready` allows it
// (the rate gate; not given while no receiver here is capped).

type Receiver<T> = { id: string; busy: number; waiting: T[]; avgMs: number | null };
type QueueOptions<T> = { limit: number; groupFactor: number; budgetMs: number; receiverOf: (item: T) => string };
/** Whether receiver `id` may start a send now (`waiting` queued, `free` slots); see createQueues' next(). */
export type SendReady = (id: string, waiting: number, free: number) => boolean;

/** The receivers' queues (above), with paused receivers kept out of them and capped ones' queues sized by their caps. */
export function createReceiverQueues<T>(options: QueueOptions<T>) {
  /** Receivers with a rate cap (deliveries per second), as their last load said. */
  const capped = new Map<string, number>();
  const queues = createQueues(options, capped);
  const pauses = createPauses();
  return {
    ...queues,
    /** Receiver `id`'s rate cap (deliveries per second), or null: none; sizes its queue (see above). */
    setCap(id: string, perSecond: number | null): void {
      if (perSecond === null) capped.delete(id);
      else capped.set(id, perSecond);
    },
    /** Receiver `id`'s rate cap, or undefined: none. */
    capOf: (id: string): number | undefined => (capped.size === 0 ? undefined : capped.get(id)),
    /** How many receivers known here have a rate cap. */
    capped: (): number => capped.size,
    /** Receivers with no room, and paused ones, to leave out of the next fetch. */
    full: (): string[] => {
      const paused = pauses.current();
      return [...paused, ...queues.full().filter((id) => !paused.has(id))];
    },
    /** Until when receiver `id` is paused (Date.now() ms), or 0 when it is not. */
    pausedUntil: pauses.until,
    /** Receivers paused here whose pause was last set at least `ms` ago (receiver-pauses.ts recheck). */
    pausedSince: pauses.setBefore,
    /** Ends receiver `id`'s pause (its row no longer holds it); true when it was paused. */
    resume: pauses.end,
    /** Pauses receiver `id` until `until` (Date.now() ms; only ever extended); returns its queued jobs, to be handed back deferred. */
    pause(id: string, until: number): T[] {
      pauses.extend(id, until);
      return queues.takeWaiting(id);
    },
    /** As queues.accept, but the jobs of a paused receiver are never queued (`always` included): returned with the rest. */
    accept(items: T[], how: { always?: boolean } = {}): T[] {
      const paused = items.filter((i) => pauses.until(options.receiverOf(i)) > 0);
      if (paused.length === 0) return queues.accept(items, how);
      return [
        ...paused,
        ...queues.accept(
          items.filter((i) => !paused.includes(i)),
          how,
        ),
      ];
    },
  };
}

/** Paused receivers: until when (Date.now() ms) and since when, each dropped once past. */
function createPauses() {
  const paused = new Map<string, { until: number; since: number }>();
  /** Until when receiver `id` is paused, or 0. */
  const until = (id: string): number => {
    if (paused.size === 0) return 0;
    const at = paused.get(id)?.until;
    if (at === undefined) return 0;
    if (at > Date.now()) return at;
    paused.delete(id);
    return 0;
  };
  /** The receivers paused now whose pause was last set at least `ms` ago. */
  const setBefore = (ms: number): string[] =>
    paused.size === 0
      ? []
      : [...paused].filter(([id, p]) => until(id) > 0 && p.since <= Date.now() - ms).map(([id]) => id);
  return {
    until,
    /** Pauses `id` until `at`, unless it is paused longer already. */
    extend: (id: string, at: number): void => {
      if (at > (paused.get(id)?.until ?? 0)) paused.set(id, { until: at, since: Date.now() });
    },
    /** The receivers paused now. */
    current: (): Set<string> => new Set(setBefore(0)),
    setBefore,
    /** Ends receiver `id`'s pause now. */
    end: (id: string): boolean => paused.delete(id),
  };
}

/** The most jobs receiver `id` may have queued and in flight here under its rate cap, if any: its sends in `budgetMs`. */
function cappedRoom(capped: ReadonlyMap<string, number>, id: string, budgetMs: number): number {
  const perSecond = capped.size === 0 ? undefined : capped.get(id);
  return perSecond === undefined ? Infinity : Math.max(1, Math.floor((perSecond * budgetMs) / 1000));
}

function createQueues<T>(options: QueueOptions<T>, capped: ReadonlyMap<string, number>) {
  const { limit, groupFactor, budgetMs } = options;
  const receivers = new Map<string, Receiver<T>>();
  let held = 0;
  let queued = 0;
  let cursor = 0;

  const get = (id: string): Receiver<T> => {
    let r = receivers.get(id);
    if (!r) receivers.set(id, (r = { id, busy: 0, waiting: [], avgMs: null }));
    return r;
  };
  const room = (r: Receiver<T>): number => {
    const prefetch = r.avgMs === null ? limit : Math.floor((limit * budgetMs) / Math.max(r.avgMs, 1));
    const most = Math.min(limit + prefetch, limit * groupFactor, cappedRoom(capped, r.id, budgetMs));
    return most - r.busy - r.waiting.length;
  };
  const forget = (id: string, r: Receiver<T>) => {
    if (r.busy === 0 && r.waiting.length === 0 && r.avgMs === null) receivers.delete(id);
  };
  /** Takes receiver `id`'s queued jobs out. */
  const take = (id: string, r: Receiver<T>): T[] => {
    const taken = r.waiting;
    r.waiting = [];
    held -= taken.length;
    queued -= taken.length;
    forget(id, r);
    return taken;
  };

  return {
    groupConcurrency: limit * groupFactor,
    /** Jobs fetched and not yet finished sending. */
    held: () => held,
    /** Jobs fetched and not yet being sent. */
    queued: () => queued,
    /** Nothing of receiver `id` is being sent or queued. */
    idle: (id: string): boolean => (receivers.get(id)?.busy ?? 0) + (receivers.get(id)?.waiting.length ?? 0) === 0,
    /** Receiver `id` has answered here (its queue is sized from its response times, not the small guess for an unknown one). */
    measured: (id: string): boolean => (receivers.get(id)?.avgMs ?? null) !== null,
    /** Receivers with no room, to leave out of the next fetch. */
    full: (): string[] => [...receivers].filter(([, r]) => room(r) <= 0).map(([id]) => id),
    /**
     * Queues what fits; returns the rest, to be handed back. `always`: queues them all (a lane's next
     * delivery claimed by the settlement of the one before it takes the place that one held).
     */
    accept(items: T[], { always = false }: { always?: boolean } = {}): T[] {
      const excess: T[] = [];
      for (const item of items) {
        const r = get(options.receiverOf(item));
        if (always || room(r) > 0) {
          r.waiting.push(item);
          held += 1;
          queued += 1;
        } else excess.push(item);
      }
      return excess;
    },
    /** The next job whose receiver has a free slot (receivers in turn) and, given `ready`, may send now; marked as sending. */
    next(ready?: SendReady): T | undefined {
      const ids = [...receivers.keys()];
      for (let i = 0; i < ids.length; i++) {
        const id = ids[(cursor + i) % ids.length]!;
        const r = receivers.get(id)!;
        if (r.busy >= limit || !r.waiting.length || (ready && !ready(id, r.waiting.length, limit - r.busy))) continue;
        cursor = (cursor + i + 1) % ids.length;
        r.busy += 1;
        queued -= 1;
        return r.waiting.shift();
      }
      return undefined;
    },
    /**
     * A send finished. `durationMs` null: nothing was sent (dropped). Returns the receiver's queued
     * jobs when it proved slow or unreachable, to be handed back.
     */
    done(id: string, durationMs: number | null, unhealthy: boolean): T[] {
      const r = get(id);
      r.busy -= 1;
      held -= 1;
      if (durationMs !== null) r.avgMs = r.avgMs === null ? durationMs : r.avgMs * 0.8 + durationMs * 0.2;
      const handBack = unhealthy || (durationMs ?? 0) > budgetMs ? take(id, r) : [];
      forget(id, r);
      return handBack;
    },
    /** Takes receiver `id`'s queued jobs out (it is paused). */
    takeWaiting(id: string): T[] {
      const r = receivers.get(id);
      return r ? take(id, r) : [];
    },
    /** Everything queued (on stop). */
    takeAll(): T[] {
      const all = [...receivers.values()].flatMap((r) => r.waiting.splice(0));
      held -= all.length;
      queued -= all.length;
      return all;
    },
  };
}
