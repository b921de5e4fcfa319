// Reads whose deadline holds in the database, not only in the client. pg's own `query_timeout` only
// stops waiting: the statement runs on in PostgreSQL until the server's statement timeout (30 s by
// default), holding a backend and its CPU long after the caller got its 503. Here each read takes a
// connection of its own, and when its deadline passes or its caller goes away (an AbortSignal: the
// HTTP client disconnected, http/closed-signal.ts) the statement is cancelled at once with the
// protocol's cancel request (a separate short connection carrying the backend's pid and secret, as
// psql's Ctrl-C does), and the caller is answered without waiting for the server: a frozen server
// still fails fast. The connection is handed back once the cancelled statement's backend is idle
// (closed if it is not after CANCEL_GIVE_UP_MS, or if a cancel request went unanswered).
import { connect } from 'node:net';
import type { PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { AppError, ClientGone } from '../kernel/errors.ts';
import { readsCancelled } from '../kernel/metrics.ts';
import { discardConnection } from './pool-errors.ts';
import type { CancellableReads, Queryable, RequestReads } from './queryable.ts';

/**
 * Where a read takes its connection: a pg Pool, or the read-replica pool (read-replicas.ts), whose
 * `reconnect` gives a statement that failed because its replica connection broke one more try, on
 * the primary (null for any other failure).
 */
export type ConnectionSource = {
  connect(): Promise<PoolClient>;
  reconnect?(client: PoolClient, error: unknown): Promise<PoolClient> | null;
};

/** How long a cancelled statement's backend may take to be idle before its connection is dropped. */
const CANCEL_GIVE_UP_MS = 5000;
/** How long a cancel request's own connection may take. */
const CANCEL_SEND_TIMEOUT_MS = 1000;
// A cancel request that reaches the backend before it has read the statement (it is still waiting
// for the client's next message) is dropped by PostgreSQL, and the statement then runs on to its
// statement timeout: on a loaded machine, a client gone 60 ms into a search left it running 5 s,
// past the query class's limits. So the cancel is sent again at this interval until the statement ends.
const CANCEL_REPEAT_MS = 50;

const gone = (signal: AbortSignal): Error => (signal.reason instanceof Error ? signal.reason : new ClientGone());

/** The answer to a read that passed its deadline: the statement has been cancelled. */
export const readDeadlineExceeded = (ms: number): AppError =>
  new AppError('SERVICE_UNAVAILABLE', `The read did not finish within ${ms} ms and was cancelled; try again shortly`, {
    headers: { 'Retry-After': '1' },
  });

/**
 * A Queryable whose `ended()` resolves once every statement it started has ended in PostgreSQL, and
 * whose `within(signal)` are the same reads also cancelled when `signal` aborts (one request's).
 */
export type BoundedReads = Queryable & { ended(): Promise<void>; within(signal: AbortSignal): RequestReads };

/**
 * `reads` cancelled when `signal` aborts too, when they can be (BoundedReads, or a wrapper that kept
 * `within`); else `reads` themselves. For a read of one request only: never for one shared by several
 * (a long poll's, feed/shared-reads.ts), which one client's going must not stop for the others.
 */
export function cancelledWith(reads: CancellableReads, signal?: AbortSignal): Queryable {
  return signal && reads.within ? reads.within(signal) : reads;
}

/**
 * A Queryable whose every statement is cancelled in PostgreSQL `ms` after it was asked for (the wait
 * for a connection included) or when `signal` aborts. `ms` 0: no deadline of ours. A caller answered
 * at the deadline or on a disconnect learns it at once; `ended()` says when the cancelled statement
 * has really stopped (what the query class's slot waits for: kernel/query-gate.ts). `shownMs`: the
 * deadline the refusal names (a GraphQL request's reads share one, and each has what is left of it).
 */
export function readsWithin(source: ConnectionSource, ms: number, signal?: AbortSignal, shownMs = ms): BoundedReads {
  const running = new Set<Promise<void>>();
  return {
    query: <R extends QueryResultRow>(config: QueryConfig) => {
      let ended!: () => void;
      const end = new Promise<void>((resolve) => (ended = resolve));
      running.add(end);
      void end.then(() => running.delete(end));
      return boundedRead<R>(source, config, { ms, shownMs }, signal, ended);
    },
    ended: async () => {
      await Promise.all(running);
    },
    within: (request) => readsWithin(source, ms, signal ? AbortSignal.any([signal, request]) : request, shownMs),
  };
}

function boundedRead<R extends QueryResultRow>(
  source: ConnectionSource,
  config: QueryConfig,
  { ms, shownMs }: { ms: number; shownMs: number },
  signal: AbortSignal | undefined,
  ended: () => void,
): Promise<QueryResult<R>> {
  if (signal?.aborted) {
    ended();
    return Promise.reject(gone(signal));
  }
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
      handBackAfterCancel(client, running, ended);
    };
    const fail = (error: unknown) => {
      ended();
      finish(error);
    };
    const onAbort = () => giveUp('disconnect', gone(signal!));
    const timer = ms > 0 ? setTimeout(() => giveUp('deadline', readDeadlineExceeded(shownMs)), ms) : undefined;
    signal?.addEventListener('abort', onAbort, { once: true });

    const run = (connected: PoolClient, retried: boolean) => {
      if (settled) {
        connected.release(); // gave up while waiting for it: nothing ran
        return ended();
      }
      client = connected;
      const query = connected.query<R>(config);
      running = query;
      query.then(
        (result) => {
          if (settled) return; // giveUp hands the connection back
          release(connected);
          ended();
          finish(null, result);
        },
        (error: unknown) => {
          if (settled) return;
          // A replica stopped under a connection the pool still held: once more, on the primary.
          const again = retried ? null : (source.reconnect?.(connected, error) ?? null);
          // The server's statement_timeout (the query pool's, equal to the deadline) may come first.
          if (!again && isStatementCancelled(error)) {
            finish(ms > 0 ? readDeadlineExceeded(shownMs) : error);
            return handBackWhenIdle(connected, ended);
          }
          release(connected, error);
          if (again) {
            client = null;
            running = null;
            again.then((next) => run(next, true), fail);
            return;
          }
          fail(error);
        },
      );
    };
    source.connect().then((connected) => run(connected, false), fail);
  });
}

// A released connection is reused; one whose statement failed because the connection broke is dropped.
/** 57014 query_canceled: a statement timeout, or a cancel request. */
const isStatementCancelled = (error: unknown): boolean => (error as { code?: unknown } | undefined)?.code === '57014';

// A statement error (a SQL error carries a SQLSTATE) leaves the connection usable.
function release(client: PoolClient, error?: unknown): void {
  const code = (error as { code?: unknown } | undefined)?.code;
  const broken = error !== undefined && (typeof code !== 'string' || /^08|^57P/.test(code));
  if (broken) discardConnection(client, error as Error);
  else client.release();
}

/** A statement its server cancelled (statement_timeout): the caller was answered; the connection is handed back, and `ended`, once its backend is idle (see below). */
function handBackWhenIdle(client: PoolClient, ended: () => void): void {
  afterIdle(client, Promise.resolve(), (error) => {
    release(client, error);
    ended();
  });
}

/**
 * Calls `done` once what `client` runs now (`after`) has ended and its backend is idle: a probe's
 * answer (or its error) on the same connection, which PostgreSQL runs only then; with an error when
 * that takes more than CANCEL_GIVE_UP_MS from now (a frozen or unreachable server).
 */
function afterIdle(client: PoolClient, after: Promise<unknown>, done: (error?: unknown) => void): void {
  let called = false;
  const once = (error?: unknown) => {
    if (called) return;
    called = true;
    clearTimeout(drop);
    done(error);
  };
  const drop = setTimeout(() => once(new Error('not idle in time')), CANCEL_GIVE_UP_MS);
  drop.unref();
  const probe = () => client.query(IDLE_PROBE).then(() => once(), once);
  void after.then(probe, probe);
}

/**
 * Cancels the statement `client` runs, again every CANCEL_REPEAT_MS until its backend is idle. The
 * end is a probe's answer on the same connection, which PostgreSQL runs only once the statement has
 * ended: the error that answers a cancelled statement comes before the backend has aborted it (it
 * waits for its parallel workers to stop and removes its temporary files first, over a second on a
 * busy server, still `active` in pg_stat_activity). Then, once the server has closed every cancel
 * request's connection (it has signalled the backend: a signal that finds the backend idle is
 * dropped there, before it reads another statement), the connection goes back to the pool and
 * `ended` is called. A cancel request that could not be sent or was not answered may still be on
 * its way, and could stop the next statement run on the connection, another caller's: then the
 * connection is closed instead, as it is when the backend is still not idle CANCEL_GIVE_UP_MS after
 * the cancel (a frozen or unreachable server). Closed after every cancel, as before, one key's
 * clients leaving mid-read (a hundred a second) made the pool open a connection for each, and every
 * key's reads and the writes waited behind those connection starts (found from outside: another
 * key's p50 from 2 to 230 ms).
 */
function handBackAfterCancel(client: PoolClient, running: Promise<unknown>, ended: () => void): void {
  const cancels: Promise<boolean>[] = [];
  const cancel = () => cancels.push(sendCancel(client));
  const repeat = setInterval(cancel, CANCEL_REPEAT_MS);
  repeat.unref();
  cancel();
  afterIdle(client, running, (error) => {
    clearInterval(repeat);
    void Promise.all(cancels).then((answered) => {
      if (error !== undefined || !answered.every(Boolean))
        discardConnection(client, (error as Error | undefined) ?? new Error('a cancel request was not answered'));
      else client.release();
      ended();
    });
  });
}
// Run on a connection only after the server's ReadyForQuery for what ran before it.
const IDLE_PROBE = 'select 1';

type Backend = { host?: string; port?: number; processID?: number | null; secretKey?: number | null };

// CancelRequest: length 16, the code 80877102, the backend's pid and secret (protocol 3.0).
const CANCEL_REQUEST_CODE = 80877102;

/**
 * The protocol's CancelRequest for the statement `client` is running, on a short connection of its
 * own. True once the server has closed that connection after reading it (it has passed the cancel on
 * to the backend); false when it could not be sent, or was not answered within CANCEL_SEND_TIMEOUT_MS.
 */
function sendCancel(client: PoolClient): Promise<boolean> {
  const { host, port, processID, secretKey } = client as unknown as Backend;
  if (processID == null || secretKey == null || port === undefined) return Promise.resolve(false);
  const message = Buffer.alloc(16);
  message.writeInt32BE(16, 0);
  message.writeInt32BE(CANCEL_REQUEST_CODE, 4);
  message.writeInt32BE(processID, 8);
  message.writeInt32BE(secretKey, 12);
  return new Promise((resolve) => {
    let answered = false;
    let failed = false;
    const socket = host?.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host);
    socket.setTimeout(CANCEL_SEND_TIMEOUT_MS, () => {
      failed = true;
      socket.destroy();
    });
    socket.on('error', () => (failed = true)); // a server that cannot be reached: the give-up timer drops the connection
    socket.on('connect', () => socket.end(message));
    socket.on('end', () => (answered = true)); // the server closed its side: the request was read
    socket.resume(); // (no data comes; flowing, the stream reports its end)
    socket.on('close', () => resolve(answered && !failed));
  });
}
