// Reads on streaming replicas (docs/contract.md, "Read replicas"): DATABASE_READ_URL names one or more; the /v1 reads
// and GraphQL queries go to a healthy one (round robin), everything else stays on the primary.
// Health is measured periodically, never per request: every `checkMs` each replica is asked how far
// its replay is behind. The time since the last replayed transaction alone would call a replica of an
// idle primary "lagging" (no new transactions to replay), so a replica whose replay position has
// reached the primary's current WAL position counts as caught up, whatever that time says.
// A replica that is down or behind by more than `maxLagMs` is skipped; with none left the reads go to
// the primary. A read that fails to reach its replica is retried on the primary at once, so a broken
// replica never fails a read.
import pg, { type Pool, type PoolClient, type QueryConfig, type QueryResult, type QueryResultRow } from 'pg';
import { isDatabaseUnavailable } from '../kernel/errors.ts';
import type { Logger } from '../kernel/logger.ts';
import { survivePoolErrors } from './pool-errors.ts';
import type { Queryable } from './queryable.ts';
import { SESSION_OPTIONS } from './session-settings.ts';
import { statementTimeouts } from './timeouts.ts';

/** What the read path needs of a pool: one statement at a time. */
export type { Queryable };

export type ReplicaStatus = { url: string; healthy: boolean; lagMs: number | null };

export type ReadPool = Queryable & {
  /** A connection of a healthy replica (of the primary when none is, or when the replica cannot be reached). */
  connect: () => Promise<PoolClient>;
  /** For a statement that failed on a replica's connection because it broke: a connection of the primary (else null). */
  reconnect: (client: PoolClient, error: unknown) => Promise<PoolClient> | null;
  status: () => ReplicaStatus[];
  close: () => Promise<void>;
};

/** `checked`: a verdict was reached (the first check says it whatever it is: a replica never usable was silent). */
type Replica = { url: string; pool: Pool; healthy: boolean; lagMs: number | null; checked: boolean };

const CHECK_SQL = `select pg_is_in_recovery() as replica, pg_last_wal_replay_lsn() >= $1::pg_lsn as caught_up,
                          coalesce(extract(epoch from now() - pg_last_xact_replay_timestamp()) * 1000, 0)::float8 as lag_ms`;

type Deps = {
  primary: Pool;
  urls: readonly string[];
  poolMax: number;
  connectTimeoutMs: number;
  statementTimeoutMs?: number;
  /** The replica sessions' `options` (default SESSION_OPTIONS). */
  sessionOptions?: string;
  maxLagMs: number;
  checkMs: number;
  logger?: Logger;
};

function openReplica(url: string, deps: Deps): Replica {
  // Replica connections are opened by us, never shared with the ORM: the application name tells them apart.
  const pool = new pg.Pool({
    connectionString: url,
    max: deps.poolMax,
    connectionTimeoutMillis: deps.connectTimeoutMs,
    application_name: 'lods-read',
    options: deps.sessionOptions ?? SESSION_OPTIONS,
    ...statementTimeouts(deps.statementTimeoutMs),
  });
  survivePoolErrors(pool); // a broken connection: the next check notices
  return { url, pool, healthy: false, lagMs: null, checked: false };
}

/** Measures every replica against the primary's current WAL position; a change of verdict is logged. */
async function checkReplicas(replicas: Replica[], deps: Deps): Promise<void> {
  const { rows } = await deps.primary.query<{ lsn: string }>({
    name: 'replica-primary-lsn',
    text: 'select pg_current_wal_lsn()::text as lsn',
  });
  const primaryLsn = rows[0]!.lsn;
  await Promise.all(replicas.map((r) => checkReplica(r, primaryLsn, deps)));
}

async function checkReplica(r: Replica, primaryLsn: string, deps: Deps): Promise<void> {
  try {
    const {
      rows: [s],
    } = await r.pool.query<{ replica: boolean; caught_up: boolean | null; lag_ms: number }>({
      name: 'replica-check',
      text: CHECK_SQL,
      values: [primaryLsn],
    });
    r.lagMs = s!.caught_up ? 0 : s!.lag_ms;
    const healthy = s!.replica && r.lagMs <= deps.maxLagMs;
    if (!s!.replica && (r.healthy || !r.checked))
      deps.logger?.warn(
        { replica: redact(r.url) },
        'read replica is not a standby (not in recovery): reads go to the primary',
      );
    else if (healthy !== r.healthy || !r.checked)
      // A replica found healthy at the first check is news, not a warning.
      deps.logger?.[healthy && !r.checked ? 'info' : 'warn'](
        { replica: redact(r.url), healthy, lagMs: Math.round(r.lagMs) },
        'read replica health changed',
      );
    r.healthy = healthy;
  } catch (error) {
    if (r.healthy || !r.checked)
      deps.logger?.warn(
        { replica: redact(r.url), healthy: false, err: (error as Error).message },
        'read replica unreachable: reads go to the primary',
      );
    r.healthy = false;
    r.lagMs = null;
  }
  r.checked = true;
}

export function createReadPool(deps: Deps): ReadPool {
  const replicas = deps.urls.map((url) => openReplica(url, deps));
  const check = () => checkReplicas(replicas, deps);

  let checking: Promise<void> = check().catch(() => {});
  const timer = setInterval(() => {
    checking = checking.then(check).catch(() => {}); // the primary unreachable: replicas keep their last verdict
  }, deps.checkMs);
  timer.unref();

  let next = 0;
  const fromReplica = new WeakMap<PoolClient, Replica>();
  /** Whether `error` means `replica` cannot be reached; if so it is skipped until the next check finds it back. */
  function unreachable(replica: Replica, error: unknown): boolean {
    if (!isDatabaseUnavailable(error)) return false;
    replica.healthy = false;
    deps.logger?.warn(
      { replica: redact(replica.url), err: (error as Error).message },
      'read replica unreachable: read served by the primary',
    );
    return true;
  }
  function pick(): Replica | null {
    for (let i = 0; i < replicas.length; i++) {
      const r = replicas[next++ % replicas.length]!;
      if (r.healthy) return r;
    }
    return null;
  }

  return {
    async query<R extends QueryResultRow>(config: QueryConfig): Promise<QueryResult<R>> {
      const replica = pick();
      if (!replica) return await deps.primary.query<R>(config);
      try {
        return await replica.pool.query<R>(config);
      } catch (error) {
        if (!unreachable(replica, error)) throw error;
        return await deps.primary.query<R>(config);
      }
    },
    async connect(): Promise<PoolClient> {
      const replica = pick();
      if (!replica) return await deps.primary.connect();
      try {
        const client = await replica.pool.connect();
        fromReplica.set(client, replica);
        return client;
      } catch (error) {
        if (!unreachable(replica, error)) throw error;
        return await deps.primary.connect();
      }
    },
    // A connection handed out just as its replica stopped (the pool had not yet seen it close) fails
    // its statement: that read goes to the primary too, as one whose connect failed.
    reconnect(client: PoolClient, error: unknown): Promise<PoolClient> | null {
      const replica = fromReplica.get(client);
      return replica && unreachable(replica, error) ? deps.primary.connect() : null;
    },
    status: () => replicas.map((r) => ({ url: redact(r.url), healthy: r.healthy, lagMs: r.lagMs })),
    async close() {
      clearInterval(timer);
      await checking;
      await Promise.all(replicas.map((r) => r.pool.end()));
    },
  };
}

/** A URL without its password, for logs. */
function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'invalid url';
  }
}
