// The failures of a task that runs again and again (the worker's fetch of delivery jobs, the folds of
// the counts, the rate limit's sync), as log lines. While the database is unreachable every pass
// fails: a worker's poll and an API's folds and sync each logged a warning with a stack every
// second of an outage. So a failure because the database is unavailable opens an outage: one warning,
// the later failures counted, and one line from the first pass that succeeds, saying how many failed
// and for how long. Any other failure is a warning each time, as before. (pg-boss's own errors have
// the same treatment in webhooks/queue/boss-errors.ts, where no success is seen.)
import { isDatabaseUnavailable } from './errors.ts';
import type { Logger } from './logger.ts';

export type OutageLog = {
  /** A pass failed with `error`. */
  failed: (error: unknown) => void;
  /** A pass succeeded: ends an outage, if one is open. */
  succeeded: () => void;
};

/** `failed`: the warning (what failed and what happens next); `recovered`: the line that ends an outage. */
export function createOutageLog(logger: Logger, messages: { failed: string; recovered: string }): OutageLog {
  let outage: { since: number; failures: number } | null = null;
  return {
    failed(error) {
      if (!isDatabaseUnavailable(error)) return logger.warn({ err: error }, messages.failed);
      if (outage) {
        outage.failures += 1;
        return;
      }
      outage = { since: Date.now(), failures: 1 };
      const code = (error as { code?: unknown }).code;
      logger.warn(
        { code: typeof code === 'string' ? code : undefined, error: (error as Error).message },
        `${messages.failed} (the database is unavailable: later failures are counted until a pass succeeds)`,
      );
    },
    succeeded() {
      if (!outage) return;
      logger.info({ failures: outage.failures, durationMs: Date.now() - outage.since }, messages.recovered);
      outage = null;
    },
  };
}
