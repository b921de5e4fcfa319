// The failures of a task that runs again and again (the worker's fetch of delivery jobs, the folds of
// the counts, the rate limit's sync, pg-boss's loops), as log lines. While the database is
// unreachable every pass fails: a worker's poll and an API's folds and sync each logged a warning with
// a stack every second of an outage, and pg-boss seven error lines in five seconds. So a failure
// because the database is unavailable opens an outage: one warning, the later failures counted, and
// one line when it ends (the first pass that succeeds, or, where no success is seen, a quiet spell:
// webhooks/queue/boss-errors.ts), saying how many failed and for how long. Any other failure is
// logged each time.
import { isDatabaseUnavailable } from './errors.ts';
import type { Logger } from './logger.ts';

export type OutageLog = {
  /** A pass failed with `error`. */
  failed: (error: unknown) => void;
  /** A pass succeeded: ends an outage, if one is open, with `message` (default: `recovered`). */
  succeeded: (message?: string) => void;
};

export type OutageMessages = {
  /** The warning that opens an outage (what failed and what happens next). */
  failed: string;
  /** The line that ends it. */
  recovered: string;
  /** Whether `error` belongs to an outage (default: the database is unavailable). */
  isOutage?: (error: unknown) => boolean;
  /** Any other failure (default: a warning with `failed`). */
  other?: (error: unknown) => void;
  /** Called when an outage opens and at every failure counted in it (boss-errors.ts restarts its quiet timer). */
  onOutageFailure?: () => void;
  /** The name of the count in the line that ends an outage (default `failures`). */
  countAs?: string;
};

export function createOutageLog(logger: Logger, messages: OutageMessages): OutageLog {
  const isOutage = messages.isOutage ?? isDatabaseUnavailable;
  const other = messages.other ?? ((error: unknown) => logger.warn({ err: error }, messages.failed));
  let outage: { since: number; failures: number } | null = null;
  return {
    failed(error) {
      if (!isOutage(error)) return other(error);
      messages.onOutageFailure?.();
      if (outage) {
        outage.failures += 1;
        return;
      }
      outage = { since: Date.now(), failures: 1 };
      const code = (error as { code?: unknown }).code;
      logger.warn(
        { code: typeof code === 'string' ? code : undefined, error: (error as Error).message },
        `${messages.failed} (the database is unavailable: later failures are counted until it answers again)`,
      );
    },
    succeeded(message = messages.recovered) {
      if (!outage) return;
      logger.info(
        { [messages.countAs ?? 'failures']: outage.failures, durationMs: Date.now() - outage.since },
        message,
      );
      outage = null;
    },
  };
}
