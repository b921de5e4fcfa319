// Opens MikroORM on PostgreSQL with the entities its caller hands in (the composition root lists them,
// database.ts: the platform knows no domain), and runs migrations.
import { readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Migrator } from '@mikro-orm/migrations';
import { MikroORM, type Options } from '@mikro-orm/postgresql';
import type { Client, Pool } from 'pg';
import { connectCreatingDatabase } from './create-database.ts';
import { tableFiles, vacuumRewritten } from './rewritten-tables.ts';
import { statementTimeouts } from './timeouts.ts';
import { SESSION_OPTIONS } from './session-settings.ts';

export type Orm = MikroORM;
/** The entities used through the ORM, every one listed explicitly by the caller. */
export type OrmEntities = NonNullable<Options['entities']>;

export const MIGRATIONS_DIR = resolve(import.meta.dirname, '../../migrations');

/**
 * `statementTimeoutMs` bounds every statement of the pool (a runaway query then frees its
 * connection): it travels in each connection's start-up message, so it also survives `reset all`;
 * a client-side timeout a little later covers a server that stopped answering (timeouts.ts).
 */
export async function openOrm(options: {
  url: string;
  entities: OrmEntities;
  poolMax: number;
  connectTimeoutMs: number;
  statementTimeoutMs?: number;
  /** Settings of every session, as libpq's `options` (default SESSION_OPTIONS). */
  sessionOptions?: string;
  debug?: boolean;
}): Promise<Orm> {
  return await MikroORM.init({
    clientUrl: options.url,
    entities: options.entities,
    extensions: [Migrator],
    discovery: { warnWhenNoEntities: true },
    // MikroORM creates a missing database on connect by default: a mistyped DATABASE_URL would get
    // one. Only migrate() creates it, for `migrate` and the service's start.
    ensureDatabase: false,
    pool: { min: 0, max: options.poolMax, idleTimeoutMillis: 30_000 },
    // Fail fast when the database is unreachable (the API answers 503), instead of queueing forever.
    driverOptions: {
      connectionTimeoutMillis: options.connectTimeoutMs,
      application_name: 'lods',
      options: options.sessionOptions ?? SESSION_OPTIONS,
      ...statementTimeouts(options.statementTimeoutMs),
    },
    migrations: {
      path: MIGRATIONS_DIR,
      glob: '!(*.d).ts',
      tableName: 'mikro_orm_migrations',
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      snapshotOnMigrate: false,
      silent: true,
    },
    debug: options.debug ?? false,
    // A request or job forks its own EntityManager; the global one is never used for work.
    allowGlobalContext: false,
  });
}

// Any constant shared by every process of this service; advisory locks are per database.
const MIGRATION_LOCK = 7_429_001;
// The folds' locks (migrations count_deltas and search_bitmaps; catalog/count-folder.ts): held while
// migrations run, so that every fold called meanwhile skips. Seen in a rolling upgrade before: an
// older process's fold_search, blocked on a migration's locks, went on once it committed with its
// older body, found the marks the migration had set for a rebuild, and cleared them without building
// the facet pairs that migration added: the facets of a one-value filter stayed wrong for good.
// The search fold's first: waiting for a fold under way (a rebuild can take minutes) must not stop
// the counts' folds meanwhile. Both are let go before the rewritten tables are vacuumed.
const FOLD_LOCKS = ['(20261223, 1)', '(20261222, 200)'];
// A migration that alters a table waits for every transaction that has read it, and every statement
// on that table queues behind its wait: a backup (pg_dump) or a long `catalog rerender` open while
// `migrate` ran made the older processes' reads and writes of that table wait as long, and their
// pools ran dry (503 on every route, found from outside). So a migration waits at most
// MIGRATION_LOCK_TIMEOUT_MS for a lock; then the run is rolled back (all or nothing: it did nothing),
// the queue behind it goes on, and it runs again a moment later, until MIGRATION_LOCK_WAIT_MS have
// passed, and at least MIGRATE_MIN_RUNS times (a long run that then waits once is not given up at
// once). A deadlock's victim (old processes take the tables in another order) runs again the same
// way. A run rolled back is done again whole: a long migration whose wait comes late repeats its work.
export const MIGRATION_LOCK_TIMEOUT_MS = 2000;
const MIGRATION_LOCK_WAIT_MS = 10 * 60 * 1000;
const MIGRATE_MIN_RUNS = 5;
const LOST_LOCK_RACE = new Set(['40P01', '55P03']);
/** What a migration waiting for locks reports before it runs again: the oldest transactions open, which may hold them. */
export type MigrationLockWait = { attempt: number; waitedMs: number; oldest: string[] };

/**
 * Applies pending migrations; returns the names of those applied. Processes starting together take
 * turns on a session-level advisory lock held on a connection of its own (MikroORM's migrator has
 * none): the first applies, the others wait and then find nothing pending. Creates the database
 * first if it is missing (only `migrate` and the service's start come here). Runs on an ORM of its
 * own, without the pool's statement timeout: a migration may rightly wait for a lock or run longer.
 * The tables the migrations rewrote are vacuumed and analyzed after them (rewritten-tables.ts).
 */
export async function migrate(
  url: string,
  connectTimeoutMs: number,
  entities: OrmEntities,
  onLockWait: (wait: MigrationLockWait) => void = () => {},
): Promise<string[]> {
  const lock = await connectCreatingDatabase(url, { connectTimeoutMs, applicationName: 'lods-migrate' });
  try {
    const sessionOptions = `${SESSION_OPTIONS} -c lock_timeout=${MIGRATION_LOCK_TIMEOUT_MS}`;
    const orm = await openOrm({ url, entities, poolMax: 1, connectTimeoutMs, sessionOptions });
    try {
      await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
      // Only with migrations to apply: a start with none does not wait for a fold under way.
      const folds = (await orm.migrator.getPending()).length > 0;
      if (folds) for (const key of FOLD_LOCKS) await lock.query(`select pg_advisory_lock${key}`);
      const before = await tableFiles(lock);
      const applied = await upAgainAfterLockWaits(orm, lock, onLockWait);
      if (folds) for (const key of FOLD_LOCKS) await lock.query(`select pg_advisory_unlock${key}`);
      if (applied.length) await vacuumRewritten(lock, before);
      return applied.map((m) => m.name);
    } finally {
      await closeOrm(orm);
    }
  } finally {
    await lock.end(); // ending the session releases the lock
  }
}

async function upAgainAfterLockWaits(
  orm: Orm,
  lock: Client,
  onLockWait: (wait: MigrationLockWait) => void,
): Promise<{ name: string }[]> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await orm.migrator.up();
    } catch (error) {
      const waitedMs = Date.now() - started;
      if (!lostLockRace(error) || (attempt >= MIGRATE_MIN_RUNS && waitedMs > MIGRATION_LOCK_WAIT_MS)) throw error;
      onLockWait({ attempt, waitedMs, oldest: await oldestTransactions(lock) });
      await sleep(Math.min(attempt, 5) * 1000);
    }
  }
}

/** The three oldest transactions open in this database but this process's: pid, application, state and age. */
async function oldestTransactions(lock: Client): Promise<string[]> {
  const { rows } = await lock.query<{ line: string }>(
    `select format('pid %s (%s, %s, open %s s)', pid, coalesce(nullif(application_name, ''), 'no application name'),
                   state, round(extract(epoch from now() - xact_start))) as line
       from pg_stat_activity
      where datname = current_database() and xact_start is not null and application_name not like 'lods-migrate%'
        and pid <> pg_backend_pid() and backend_type = 'client backend'
      order by xact_start limit 3`,
  );
  return rows.map((r) => r.line);
}

/** Whether `error` (or an error it wraps: the migrator names the migration) is a deadlock's or a lock timeout's. */
function lostLockRace(error: unknown): boolean {
  for (let e = error; e instanceof Error; e = e.cause)
    if (LOST_LOCK_RACE.has(String((e as { code?: unknown }).code))) return true;
  return false;
}

/** Closes MikroORM and its pool: MikroORM ends the pool only if its query builder ever ran, and an open pool keeps the process waiting for its idle timeout. */
export async function closeOrm(orm: Orm): Promise<void> {
  const pool = await nativePool(orm);
  await orm.close(true);
  if (!pool.ending) await pool.end();
}

/**
 * Read without writing anything: `pending`, the migrations in MIGRATIONS_DIR the database has not
 * recorded; `newer`, those it has recorded that this version does not have (a newer version applied them).
 */
export async function migrationState(pool: Pool): Promise<{ pending: string[]; newer: string[] }> {
  const known = readdirSync(MIGRATIONS_DIR)
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .map((file) => file.slice(0, -'.ts'.length));
  const [{ tracked }] = (
    await pool.query<{ tracked: boolean }>("select to_regclass('mikro_orm_migrations') is not null as tracked")
  ).rows as [{ tracked: boolean }];
  const rows = tracked ? (await pool.query<{ name: string }>('select name from mikro_orm_migrations')).rows : [];
  const recorded = rows.map((r) => r.name);
  return {
    pending: known.filter((name) => !recorded.includes(name)).sort(),
    newer: recorded.filter((name) => !known.includes(name)).sort(),
  };
}

/** The pg pool behind MikroORM, for the few hot paths written in plain SQL. */
export async function nativePool(orm: Orm): Promise<Pool> {
  return (await orm.em.getConnection().getNativeClient()) as Pool;
}
