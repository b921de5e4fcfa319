// Identical feed reads asked for at once share one statement. Every long poll of a process wakes on
// each commit, and those that follow the feed from the same cursor (the usual case: caught up, each
// at the head) asked the same page, a statement each: 100 waiters and 2 commits a second made 200
// reads a second on the pool that plain reads use (another key's p99 10 -> 290 ms, found from
// outside). A read is shared only within one wake-up (feed-waiters.ts wakeUps: a commit's, or the
// horizon re-check's): a read started before a wake-up never answers a request that it woke, so
// none misses what woke it. Only long polls share (http/v1/events.ts): any other read starts after
// its request arrived. The page is shared as it is: its readers never change it.

/** `share(key, read)`: the read under way for `key` if there is one, else `read()`, shared until it settles. */
export function sharedReads<T>(): (key: string, read: () => Promise<T>) => Promise<T> {
  const running = new Map<string, Promise<T>>();
  return (key, read) => {
    const found = running.get(key);
    if (found) return found;
    const started = read().finally(() => running.delete(key));
    running.set(key, started);
    return started;
  };
}
