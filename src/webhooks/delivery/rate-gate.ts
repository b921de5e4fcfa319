// Rate caps in the worker (worker.ts; the send slots own the gate, send-slots.ts): a receiver with
// receiver.max_per_second sends only with a send token, taken from its row in receiver_pace by one
// statement (receivers/rate-cap.ts, shared by every worker and process). Its cap is known from its
// loaded row (each fetched batch's and each claim's receivers note theirs in the queues, load-batch.ts):
// for every other receiver nothing changes, and while none is capped the send slots do not even ask.
// - The send slots ask `ready` before taking a capped receiver's job (receiver-queues.ts next()): a
//   token in hand is used; without one, a take for the jobs it could start now (queued, within its
//   concurrency) goes to the database, and `dispatch` runs again when it answers. Tokens are for
//   sending at once: what the dispatch after a take does not use is dropped, so that a send never
//   starts long after the database counted it.
// - Refused (the cap's rate is used up for now), the receiver is asked again when its next token is
//   due (the statement says when). Its jobs wait here meanwhile: a capped receiver's queue holds only
//   what its cap sends in the prefetch budget (receiver-queues.ts), the rest waits in the database
//   queue, not fetched, and not counted as a failure. Other receivers are not held up: the slots skip
//   a receiver that may not send.
// - Refused for longer than MAX_TOKEN_WAIT_MS (other workers use its rate), or told to wait longer than
//   that, the receiver is paused until its next token is due (receiver-pauses.ts): its queued jobs go
//   back to the queue deferred until then, so that none waits here toward its expiry.
// - A take that finds the cap removed forgets the receiver here until a load says otherwise.
// LATEST_STATE: a capped receiver's jobs waiting in the database queue are replaced by newer events of
// their records, as any waiting job is (queue/lanes.ts), so a receiver held back by its cap gets fewer,
// newer deliveries; a job already here is checked just before it is sent (send-slots.ts).
import type { Pool } from 'pg';
import type { Logger } from '../../kernel/logger.ts';
import { rateCapTakes } from '../../kernel/metrics.ts';
import { takeSendTokens } from '../receivers/rate-cap.ts';

/** The longest a capped receiver's jobs wait here for a send token before they go back to the queue, deferred. */
export const MAX_TOKEN_WAIT_MS = 1000;
/** After a failed take, the wait before the next one. */
const RETRY_AFTER_ERROR_MS = 200;

type Gate = {
  /** Tokens in hand, for sends starting now. */
  tokens: number;
  /** A take is under way. */
  asking: boolean;
  /** The next take is due then (a timer). */
  retry: NodeJS.Timeout | null;
  /** Since when its takes were refused, while they are (performance.now()). */
  refusedSince: number | null;
};

export type RateGateDeps = {
  pool: Pool;
  logger: Logger;
  /** The receivers' caps as loaded (receiver-queues.ts): read, and cleared when a take finds none. */
  queues: { capOf: (receiverId: string) => number | undefined; setCap: (receiverId: string, perSecond: null) => void };
  /** Fills free send slots (send-slots.ts dispatch). */
  dispatch: () => void;
  /** Pauses a receiver until `until` (Date.now() ms): its queued jobs go back deferred (receiver-pauses.ts). */
  pause: (receiverId: string, until: number) => void;
  /** True once the worker is stopping. */
  closing: () => boolean;
};

export class RateGate {
  readonly #deps: RateGateDeps;
  readonly #gates = new Map<string, Gate>();

  constructor(deps: RateGateDeps) {
    this.#deps = deps;
  }

  /**
   * For the send slots (receiver-queues.ts next()): whether receiver `id` may start a send now, with
   * `waiting` jobs queued and `free` slots. Uses a token; without one, takes tokens for what it could
   * start now (min(waiting, free)) unless a take is under way or due later, and says no.
   */
  readonly ready = (id: string, waiting: number, free: number): boolean => {
    if (this.#deps.queues.capOf(id) === undefined) {
      if (this.#gates.size > 0 && this.#gates.has(id)) this.#forget(id);
      return true;
    }
    let gate = this.#gates.get(id);
    if (!gate) this.#gates.set(id, (gate = { tokens: 0, asking: false, retry: null, refusedSince: null }));
    if (gate.tokens > 0) {
      gate.tokens--;
      return true;
    }
    if (!gate.asking && gate.retry === null && !this.#deps.closing())
      void this.#take(id, gate, Math.min(waiting, free));
    return false;
  };

  /** Stops every timer (the worker stops). */
  clear(): void {
    for (const gate of this.#gates.values()) if (gate.retry) clearTimeout(gate.retry);
    this.#gates.clear();
  }

  async #take(id: string, gate: Gate, wanted: number): Promise<void> {
    gate.asking = true;
    let tokens: Awaited<ReturnType<typeof takeSendTokens>>;
    try {
      tokens = await takeSendTokens(this.#deps.pool, id, Math.max(1, wanted));
    } catch (error) {
      gate.asking = false;
      this.#deps.logger.warn({ err: error, receiverId: id }, 'taking send tokens of a rate-capped receiver failed');
      this.#later(id, gate, RETRY_AFTER_ERROR_MS);
      return;
    }
    gate.asking = false;
    if (this.#gates.get(id) !== gate) return; // forgotten meanwhile (cap removed, worker stopping)
    if (tokens === null) {
      rateCapTakes.inc({ result: 'uncapped' });
      this.#forget(id);
      this.#deps.dispatch();
      return;
    }
    rateCapTakes.inc({ result: tokens.granted > 0 ? 'granted' : 'denied' });
    const now = performance.now();
    if (tokens.granted > 0) gate.refusedSince = null;
    else gate.refusedSince ??= now;
    if (tokens.granted < wanted) {
      const refusedFor = gate.refusedSince === null ? 0 : now - gate.refusedSince;
      if (tokens.waitMs > MAX_TOKEN_WAIT_MS || refusedFor + tokens.waitMs > MAX_TOKEN_WAIT_MS) {
        // Its jobs here go back to the queue until its next token is due; none waits here toward its expiry.
        gate.refusedSince = null;
        this.#deps.pause(id, Date.now() + tokens.waitMs);
      } else this.#later(id, gate, tokens.waitMs);
    }
    gate.tokens = tokens.granted;
    this.#deps.dispatch();
    // Tokens are for sends starting now: those this dispatch did not use are dropped.
    gate.tokens = 0;
  }

  /** Asks receiver `id` again (through a dispatch) in `ms`. */
  #later(id: string, gate: Gate, ms: number): void {
    if (this.#deps.closing()) return;
    gate.retry = setTimeout(
      () => {
        gate.retry = null;
        if (this.#gates.get(id) === gate) this.#deps.dispatch();
      },
      Math.max(1, ms),
    );
  }

  #forget(id: string): void {
    const gate = this.#gates.get(id);
    if (gate?.retry) clearTimeout(gate.retry);
    this.#gates.delete(id);
    this.#deps.queues.setCap(id, null);
  }
}
