// When the worker fetches: a small state machine, so that every wake-up source (a NOTIFY, the poll,
// a retry timer, a slot freed by a finished delivery) can call wake() at any time, and fetch rounds
// never overlap nor get lost.
//
//   state           wake()                       round ends        stop()
//   idle            -> scheduled (next turn)     -                 -> stopped
//   scheduled       (stays: already due)         -                 -> stopped
//   fetching        -> fetchingAgain             -> idle           -> stopped
//   fetchingAgain   (stays)                      -> scheduled      -> stopped
//   stopped         (ignored)                    (stays)           (stays)
//
// "scheduled" runs the round on the next turn of the event loop (setImmediate): many deliveries
// end together when a group commit lands, and they need one refill, not one each. A wake during a
// round means new work may have arrived after the round looked, so another round follows.
//
// `holdOffMs` (optional) may put a scheduled round off: asked at each wake, a positive answer
// schedules the round that many ms later instead of on the next turn, and a later wake answered
// with 0 brings it forward. The worker holds off while it has plenty queued (worker.ts).
//
// freed() is the wake of a finished delivery (room freed up): ignored while the last fetch found
// nothing for this worker (queueEmpty(true)) and nothing has woken the pump since. On a hot lane
// the settlement claims the next delivery itself, and each step fetched the empty queue (299 times
// in 300 in probe-ordered.ts's hot record). Whatever may fill the queue calls wake() (worker.ts:
// NOTIFY, the poll, retry and pause timers, the lane sweeper, a dropped delivery) or, jobs handed
// back, queueEmpty(false).
export type PumpState = 'idle' | 'scheduled' | 'fetching' | 'fetchingAgain' | 'stopped';

export type Pump = {
  wake: () => void;
  /** Room freed up: wake(), unless the queue was found empty since the last wake(). */
  freed: () => void;
  /**
   * What the last fetch found: nothing for this worker (true: nothing ready, and no cap can have hidden
   * any: no receiver left out of it, no batch loading, which pg-boss counts), or maybe something (false).
   */
  queueEmpty: (empty: boolean) => void;
  state: () => PumpState;
  /** No more rounds; resolves when the one running (if any) has ended. */
  stop: () => Promise<void>;
};

export function createPump(round: () => Promise<void>, options: { holdOffMs?: () => number } = {}): Pump {
  let state: PumpState = 'idle';
  let running: Promise<void> = Promise.resolve();
  // The timer of a round put off, if any.
  let later: NodeJS.Timeout | null = null;
  let empty = false;

  function wake(): void {
    empty = false;
    if (state === 'idle') {
      state = 'scheduled';
      const delay = options.holdOffMs?.() ?? 0;
      if (delay > 0) later = setTimeout(start, delay);
      else setImmediate(start);
    } else if (state === 'scheduled') {
      if (later && !(options.holdOffMs!() > 0)) {
        clearTimeout(later);
        later = null;
        setImmediate(start);
      }
    } else if (state === 'fetching') {
      state = 'fetchingAgain';
    }
  }

  function start(): void {
    if (state !== 'scheduled') return;
    if (later) clearTimeout(later);
    later = null;
    state = 'fetching';
    running = round().finally(() => {
      if (state === 'stopped') return;
      const again = state === 'fetchingAgain';
      state = 'idle';
      if (again) wake();
    });
  }

  return {
    wake,
    freed: () => {
      if (!empty) wake();
    },
    queueEmpty: (found) => {
      empty = found;
    },
    state: () => state,
    async stop() {
      state = 'stopped';
      if (later) clearTimeout(later);
      later = null;
      await running;
    },
  };
}
