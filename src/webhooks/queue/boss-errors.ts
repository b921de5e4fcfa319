// pg-boss's 'error' events, as log lines (kernel/outage-log.ts). While the database is unreachable
// every pg-boss loop (supervision, monitoring, maintenance) fails on each pass: a five-second outage
// gave seven error lines for something the service recovers from by itself. So connection failures
// open an outage: one warning when it starts, the errors counted, and one line when none has come for
// QUIET_MS (the database answers again). Anything else is an error line as before. pg-boss's own LISTEN
// connection (webhooks/queue/boss.ts, listenForDeliveries) reports losing the database in words of its
// own (heartbeat timed out, connection ended): those are the same outage.
import { isDatabaseUnavailable } from '../../kernel/errors.ts';
import { createOutageLog } from '../../kernel/outage-log.ts';
import type { Logger } from '../../kernel/logger.ts';

/** What pg-boss's LISTEN connection says when it loses the database (it reconnects by itself). */
const LISTENER_LOST = /^LISTEN\/NOTIFY (heartbeat timed out|connection ended)$/;

const isOutage = (error: unknown) =>
  isDatabaseUnavailable(error) || (error instanceof Error && LISTENER_LOST.test(error.message));

/** Errors of this long without another end an outage (several pg-boss passes at their slowest). */
const QUIET_MS = 60_000;

export function createBossErrorLog(log: Logger, quietMs = QUIET_MS) {
  let timer: NodeJS.Timeout | undefined;
  const outages = createOutageLog(log, {
    failed: 'pg-boss cannot reach the database; its errors are counted until it recovers',
    recovered: 'pg-boss errors stopped: the database answers again',
    isOutage,
    other: (error) => log.error({ err: error }, 'pg-boss error'),
    countAs: 'errors',
    // pg-boss reports no success: an outage ends when no error has come for quietMs.
    onOutageFailure: () => {
      clearTimeout(timer);
      timer = setTimeout(() => outages.succeeded(), quietMs);
      timer.unref();
    },
  });
  return {
    onError: outages.failed,
    /** pg-boss stopped: report an open outage now. */
    close: () => {
      clearTimeout(timer);
      outages.succeeded('pg-boss stopped while the database was unreachable');
    },
  };
}
