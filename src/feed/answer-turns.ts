// Long polls woken together are answered a batch per turn of the event loop. One commit wakes every
// long poll of the process, and those at one cursor share one read (shared-reads.ts): when it
// returns, each of them renders and writes its answer, one after the other on the process's one
// thread, and a plain request that arrived meanwhile waited behind all of them (320 waiters: another
// key's p99 from 9-20 to 31-44 ms, bench/README.md "Long polls answered a batch per turn").
//
// Every caller waits for a turn: a batch is let through by a setImmediate callback, and the next
// batch's is set from that callback, which Node runs in the loop's next pass, after the sockets are
// polled. (Letting the first callers through at once would put two batches in one pass: the ones let
// through in the poll phase, then the check phase's.)

/** Enough to keep the turns few (320 answers in 20), few enough that a turn takes a millisecond or two. */
export const LONG_POLL_ANSWERS_PER_TURN = 16;

/** `take()`: resolves when this caller's batch is let through, `perTurn` callers per pass of the event loop. */
export function answerTurns(perTurn: number): { take(): Promise<void> } {
  const queued: Array<() => void> = [];
  let scheduled = false;
  const nextTurn = () => {
    for (const go of queued.splice(0, perTurn)) go();
    scheduled = queued.length > 0;
    if (scheduled) setImmediate(nextTurn);
  };
  return {
    take() {
      return new Promise<void>((go) => {
        queued.push(go);
        if (!scheduled) {
          scheduled = true;
          setImmediate(nextTurn);
        }
      });
    },
  };
}
