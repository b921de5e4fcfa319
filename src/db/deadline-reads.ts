// Reads whose deadline holds in the database, not only in the client. pg's own `query_timeout` only
// stops waiting: the statement runs on in PostgreSQL until the server's statement timeout (30 s by
// default), holding a backend and its CPU long after the caller got its 503. Here each read takes a
// connection of its own, and when its deadline passes or its caller goes away (an AbortSignal: the
// HTTP client disconnected, http/closed-signal.ts) the statement is cancelled at once with the
// protocol's cancel request (a separate short connection carrying the backend's pid and secret, as
// psql's Ctrl-C does), and the caller is answered without waiting for the server: a frozen server
// still fails fast. The
// connection goes back to the pool when the cancelled statement has ended, or is dropped if that
// does not happen within CANCEL_GRACE_MS.
import { connect } from 'node:net';
import type { PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { AppError, ClientGone } from '../kernel/errors.ts';
import { readsCancelled } from '../kernel/metrics.ts';
import type { Queryable } from './queryable.ts';

/**
 * Where a read takes its connection: a pg Pool, or the read-replica pool (read-replicas.ts), whose
 * `reconnect` gives a statement that failed because its replica connection broke one more try, on
 * the primary (null for any other failure).
 */
export type ConnectionSource = {
  connect(): Promise<PoolClient>;
  reconnect?(client: PoolClient, error: unknown): Promise<PoolClient> | null;
};

/** How long a cancelled statement may take to end before its connection is dropped instead of reused. */
const CANCEL_GRACE_MS = 1000;

const gone = (signal: AbortSignal): Error => (signal.reason instanceof Error ? signal.reason : new ClientGone());

/** The answer to a read that passed its deadline: the statement has been cancelled. */
export const readDeadlineExceeded = (ms: number): AppError =>
  new AppError('SERVICE_UNAVAILABLE', `The read did not finish within ${ms} ms and was cancelled; try again shortly`, {
    headers: { 'Retry-After': '1' },
  });

/**
 * A Queryable whose every statement is cancelled in PostgreSQL `ms` after it was asked for (the wait
 * for a connection included) or when `signal` aborts. `ms` 0: no deadline of ours.
 */
export function readsWithin(source: ConnectionSource, ms: number, signal?: AbortSignal): Queryable {
  return {
    query: <R extends QueryResultRow>(config: QueryConfig) => boundedRead<R>(source, config, ms, signal),
  };
}

function boundedRead<R extends QueryResultRow>(
  source: ConnectionSource,
  config: QueryConfig,
  ms: number,
  signal: AbortSignal | undefined,
): Promise<QueryResult<R>> {
  if (signal?.aborted) return Promise.reject(gone(signal));
  return new Promise((resolve, reject) => {
    let client: PoolClient | null = null;
    let running: Promise<unknown> | null = null;
    let settled = false;
    const finish = (error: unknown, result?: QueryResult<R>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (error) reject(error as Error);
      else resolve(result!);
    };
    // Stops the statement (if it started) and answers the caller now; the connection is handed back later.
    const giveUp = (reason: 'deadline' | 'disconnect', error: unknown) => {
      if (settled) return;
      finish(error);
      if (!client || !running) return; // still waiting for a connection: released when it comes (below)
      readsCancelled.inc({ reason });
      handBackAfterCancel(client, running);
    };
    const onAbort = () => giveUp('disconnect', gone(signal!));
    const timer = ms > 0 ? setTimeout(() => giveUp('deadline', readDeadlineExceeded(ms)), ms) : undefined;
    signal?.addEventListener('abort', onAbort, { once: true });

    const run = (connected: PoolClient, retried: boolean) => {
      if (settled) return connected.release(); // gave up while waiting for it: nothing ran
      client = connected;
      const query = connected.query<R>(config);
      running = query;
      query.then(
        (result) => {
          if (settled) return; // giveUp hands the connection back
          release(connected);
          finish(null, result);
        },
        (error: unknown) => {
          if (settled) return;
          // A replica stopped under a connection the pool still held: once more, on the primary.
          const again = retried ? null : (source.reconnect?.(connected, error) ?? null);
          release(connected, error);
          if (again) {
            client = null;
            running = null;
            again.then((next) => run(next, true), finish);
            return;
          }
          // The server's statement_timeout (the query pool's, equal to the deadline) may come first.
          finish(ms > 0 && isStatementCancelled(error) ? readDeadlineExceeded(ms) : error);
        },
      );
    };
    source.connect().then((connected) => run(connected, false), finish);
  });
}

// A released connection is reused; one whose statement failed because the connection broke is dropped.
/** 57014 query_canceled: a statement timeout, or a cancel request. */
const isStatementCancelled = (error: unknown): boolean => (error as { code?: unknown } | undefined)?.code === '57014';

// A statement error (a SQL error carries a SQLSTATE) leaves the connection usable.
function release(client: PoolClient, error?: unknown): void {
  const code = (error as { code?: unknown } | undefined)?.code;
  const broken = error !== undefined && (typeof code !== 'string' || /^08|^57P/.test(code));
  client.release(broken ? (error as Error) : undefined);
}

/** Cancels the statement `client` runs; the connection returns to the pool once it has ended, or is dropped. */
function handBackAfterCancel(client: PoolClient, running: Promise<unknown>): void {
  let released = false;
  const once = (error?: Error) => {
    if (released) return;
    released = true;
    clearTimeout(drop);
    client.release(error);
  };
  const drop = setTimeout(() => once(new Error('cancelled statement did not end')), CANCEL_GRACE_MS);
  drop.unref();
  void running.then(
    () => once(),
    () => once(),
  );
  sendCancel(client);
}

type Backend = { host?: string; port?: number; processID?: number | null; secretKey?: number | null };

// CancelRequest: length 16, the code 80877102, the backend's pid and secret (protocol 3.0).
const CANCEL_REQUEST_CODE = 80877102;

/** The protocol's CancelRequest for the statement `client` is running, on a short connection of its own. */
function sendCancel(client: PoolClient): void {
  const { host, port, processID, secretKey } = client as unknown as Backend;
  if (processID == null || secretKey == null || port === undefined) return;
  const message = Buffer.alloc(16);
  message.writeInt32BE(16, 0);
  message.writeInt32BE(CANCEL_REQUEST_CODE, 4);
  message.writeInt32BE(processID, 8);
  message.writeInt32BE(secretKey, 12);
  const socket = host?.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host);
  socket.setTimeout(CANCEL_GRACE_MS, () => socket.destroy());
  socket.on('error', () => {}); // a server that cannot be reached: the grace timer drops the connection
  socket.on('connect', () => socket.end(message));
}
