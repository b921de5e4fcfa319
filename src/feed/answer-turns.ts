// Long polls woken together are answered a batch per turn of the event loop. One commit wakes every
// long poll of the process, and those at one cursor share one read (shared-reads.ts): when it
// returns, each of them renders and writes its answer, one after the other on the process's one
// thread, and a plain request that arrived meanwhile waited behind all of them (320 waiters: another
// key's p99 from 9-20 to 31-44 ms, bench/README.md "Long polls answered a batch per turn"). Taking
// a turn lets `perTurn` answers through at once and the rest in later turns, with the sockets
// polled between batches.

/** Enough to keep the turns few (320 answers in 20), few enough that a turn takes a millisecond or two. */
export const LONG_POLL_ANSWERS_PER_TURN = 16;

/** `take()`: resolves when this caller may go on (in this turn if fewer than `perTurn` have). */
export function answerTurns(perTurn: number): { take(): Promise<void> } {
  let taken = 0;
  let scheduled = false;
  const queued: Array<() => void> = [];
  const nextTurn = () => {
    scheduled = false;
    const now = queued.splice(0, perTurn);
    taken = now.length;
    for (const go of now) go();
    schedule();
  };
  function schedule() {
    if (scheduled || (taken === 0 && queued.length === 0)) return;
    scheduled = true;
    setImmediate(nextTurn);
  }
  return {
    take() {
      if (taken < perTurn && queued.length === 0) {
        taken++;
        schedule(); // the count starts again at the next turn
        return Promise.resolve();
      }
      return new Promise<void>((go) => {
        queued.push(go);
        schedule();
      });
    },
  };
}
