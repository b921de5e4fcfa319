// A queue per record id in front of the database's lock (catalog-writes.ts): writers of one id in
// this process wait here, in memory, instead of each holding a pooled connection while PostgreSQL's
// advisory lock makes it wait. Twenty parallel upserts of one record used to take twenty of the
// pool's connections, so /v1 reads sharing the pool waited past DB_CONNECT_TIMEOUT_MS and got 503.
// A call takes its place in the queue of each of its ids at once (no await between them), before its
// transaction starts, and leaves them all when it ends: two calls that share ids are in the same order
// in every one of those queues, so they cannot wait for each other.
// The database's lock stays what serialises writers across processes.

/** Leaves the ids entered. */
export type Leave = () => void;

export type IdGate = {
  /** Waits until no other call of this process holds any of `ids`, then holds them until `Leave`. */
  enter: (ids: readonly string[]) => Promise<Leave>;
  /** Ids held or waited for (for tests). */
  size: () => number;
};

export function createIdGate(): IdGate {
  // Per id: the promise that resolves once its last holder or waiter has left.
  const tails = new Map<string, Promise<void>>();

  return {
    async enter(ids) {
      const waits: Promise<void>[] = [];
      const leaves: Leave[] = [];
      for (const id of new Set(ids)) {
        const before = tails.get(id);
        let leave!: () => void;
        const left = new Promise<void>((resolve) => (leave = resolve));
        const tail = before ? before.then(() => left) : left;
        tails.set(id, tail);
        if (before) waits.push(before);
        leaves.push(() => {
          leave();
          if (tails.get(id) === tail) tails.delete(id);
        });
      }
      await Promise.all(waits);
      return () => {
        for (const leave of leaves) leave();
      };
    },
    size: () => tails.size,
  };
}
