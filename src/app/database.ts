// Opens the database the configuration names (or the embedded one), migrated and ready.
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import pg, { type Pool } from 'pg';
import type { Config } from '../kernel/config.ts';
import { type EmbeddedDatabase, startEmbeddedPostgres, stopLeftBehindEmbedded } from '../db/embedded-postgres.ts';
import { apiKeyEntities } from '../auth/entities.ts';
import { catalogEntities } from '../catalog/entities.ts';
import { eventsAheadOfCluster } from '../feed/restored-xids.ts';
import {
  closeOrm,
  migrate,
  MIGRATION_LOCK_TIMEOUT_MS,
  migrationState,
  nativePool,
  openOrm,
  type Orm,
} from '../db/orm.ts';
import { createReadPool, type Queryable } from '../db/read-replicas.ts';
import type { ConnectionSource } from '../db/deadline-reads.ts';
import { databaseName, NO_SUCH_DATABASE } from '../db/create-database.ts';
import type { Logger } from '../kernel/logger.ts';
import { isDatabaseUnavailable, OperatorError } from '../kernel/errors.ts';

/** The entities used through MikroORM (the rest of the tables are read and written in plain SQL). */
const ENTITIES = [...catalogEntities, ...apiKeyEntities];

export type Database = {
  orm: Orm;
  /** The primary: writes, keys management, pg-boss, and reads outside /v1 and GraphQL queries. */
  pool: Pool;
  /** The /v1 reads and GraphQL's catalog and feed queries: a healthy read replica when DATABASE_READ_URL names any, else the primary. */
  readPool: Queryable & ConnectionSource;
  url: string;
  embedded: boolean;
  /** The migrations applied when it was opened (none unless opened to migrate). */
  applied: readonly string[];
  close: () => Promise<void>;
};

/** A database as the service and the CLI open it: also the migrations it has that this version does not (a newer version applied them). */
export type OpenedDatabase = Database & { newer: readonly string[] };

/**
 * What opening does to the schema. `migrate`: create the database if missing and apply pending
 * migrations (the service's start). `current`: the database must exist and be fully migrated (CLI
 * commands: a mistyped DATABASE_URL fails instead of creating a database). The embedded default is
 * always migrated: it is ours.
 */
export type SchemaPolicy = 'migrate' | 'current';

/** Where a running embedded cluster's URL is kept, so that the CLI and psql can reach it. */
export function embeddedUrlFile(dataDir: string): string {
  return resolve(dataDir, 'embedded-url');
}

/** `readReplicas`: open DATABASE_READ_URL's replicas (only the API reads from them; others would just hold connections and health checks). */
export async function openDatabase(
  config: Config,
  logger: Logger,
  options: { schema: SchemaPolicy; readReplicas?: boolean },
): Promise<OpenedDatabase> {
  let embedded: EmbeddedDatabase | null = null;
  const warn = (message: string) => logger.warn(message);
  // A cluster whose starter was killed is stopped, not used: nobody would ever stop it.
  if (!config.databaseUrl) await stopLeftBehindEmbedded(`${config.dataDir}/pg`, warn);
  let url = config.databaseUrl ?? (await runningEmbeddedUrl(config.dataDir));
  const urlFile = embeddedUrlFile(config.dataDir);
  const schema = options.schema === 'current' && !config.databaseUrl ? 'migrate' : options.schema;
  if (!url) {
    logger.info({ dataDir: config.dataDir }, 'starting embedded PostgreSQL');
    embedded = await startEmbeddedPostgres({
      dir: `${config.dataDir}/pg`,
      database: 'lods',
      persistent: true,
      onLog: (m) => logger.trace({ pg: m.trim() }, 'postgres'),
      onWarning: warn,
    });
    logger.info({ dir: embedded.dir, binaries: embedded.binaries }, 'embedded PostgreSQL running');
    // A command run outside the service's checkout found no cluster and made an empty one: say so
    // (it answered `keys list` with "(none)", as if the service's keys were gone).
    if (embedded.fresh && options.schema === 'current')
      logger.warn(
        { dataDir: resolve(config.dataDir) },
        "no DATABASE_URL, and no embedded PostgreSQL in DATA_DIR yet: started a new, empty one there. To reach the service's, run the command in its checkout (or set DATA_DIR to its data directory), or set DATABASE_URL",
      );
    url = embedded.url;
    // Lets the CLI (another process) use the cluster this process runs instead of starting its own.
    await writeFile(urlFile, `${url}\n`, { mode: 0o600 });
  }
  const ownEmbedded = embedded;
  const stopEmbedded = async () => {
    if (!ownEmbedded) return;
    await rm(urlFile, { force: true });
    await ownEmbedded.stop();
  };
  try {
    const db = await connectDatabase(url, {
      poolMax: config.db.poolMax,
      connectTimeoutMs: config.db.connectTimeoutMs,
      statementTimeoutMs: config.db.statementTimeoutMs,
      migrate: schema === 'migrate',
      logger,
      readReplicas: options.readReplicas ? config.readReplicas : undefined,
    });
    const newer = await checkSchema(db, schema === 'current', logger).catch(async (error: unknown) => {
      await db.close();
      throw error;
    });
    return {
      ...db,
      newer,
      embedded: embedded !== null,
      close: async () => {
        await db.close();
        await stopEmbedded();
      },
    };
  } catch (error) {
    await stopEmbedded();
    throw config.databaseUrl ? unusable(config.databaseUrl, error) : error;
  }
}

/**
 * A DATABASE_URL that cannot be used (nothing listening, an unknown host, refused credentials, no
 * such database), said in one sentence naming the setting and the host, without a stack or the
 * password (the service's start and the CLI print it); anything else as it is.
 */
function unusable(databaseUrl: string, error: unknown): unknown {
  const code = (error as { code?: unknown })?.code;
  const refused = typeof code === 'string' && (code.startsWith('28') || code === NO_SUCH_DATABASE);
  if (!(refused || isDatabaseUnavailable(error))) return error;
  const reason = (error as Error)?.message || (error as AggregateError)?.errors?.[0]?.message || String(code ?? error);
  return new OperatorError(
    `cannot use the database of DATABASE_URL (${new URL(databaseUrl).host}): ${reason}. Check that PostgreSQL runs there and takes this URL's user and database`,
    { cause: error },
  );
}

/**
 * The migrations, read once: with `current` (a command that must not migrate), fails with a sentence an
 * operator can act on when the database is missing or not migrated. Warns of migrations a newer version
 * applied (returned), and of events ahead of the cluster (a restore into another one: restored-xids.ts).
 */
async function checkSchema(db: Database, current: boolean, logger: Logger): Promise<readonly string[]> {
  const name = databaseName(db.url);
  let state: { pending: string[]; newer: string[] };
  try {
    state = await migrationState(db.pool);
  } catch (error) {
    if ((error as { code?: string }).code !== NO_SUCH_DATABASE) throw error;
    throw new Error(
      `database "${name}" does not exist (check DATABASE_URL; \`npm run cli -- migrate\` creates and migrates a new one)`,
      { cause: error },
    );
  }
  if (current && state.pending.length)
    throw new Error(
      `database "${name}" is not migrated (${state.pending.length} pending; run \`npm run cli -- migrate\`)`,
    );
  if (state.newer.length)
    logger.warn(
      { newer: state.newer },
      'the database has migrations this version does not have (a newer version applied them): expected while a rollout runs both versions; otherwise run the newer version',
    );
  const ahead = await eventsAheadOfCluster(db.pool);
  if (ahead)
    logger.error(
      ahead,
      "the change feed's events carry transaction ids ahead of this PostgreSQL cluster (restored from another cluster?): events written now would sort before them, and feed cursors would pass over them. Stop the service and advance the cluster's transaction ids past `newest` (docs/operations.md, section 9)",
    );
  return state.newer;
}

/** The URL of an embedded cluster another process of ours is running on this data dir, if any. */
async function runningEmbeddedUrl(dataDir: string): Promise<string | undefined> {
  const urlFile = embeddedUrlFile(dataDir);
  if (!existsSync(urlFile)) return undefined;
  const url = (await readFile(urlFile, 'utf8')).trim();
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    return url;
  } catch {
    await rm(urlFile, { force: true }); // left behind by a process that was killed
    return undefined;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Opens MikroORM on `url` (migrating it unless told not to), and the read replicas if any. */
export async function connectDatabase(
  url: string,
  options: {
    poolMax: number;
    connectTimeoutMs: number;
    statementTimeoutMs?: number;
    migrate: boolean;
    logger?: Logger;
    readReplicas?: Config['readReplicas'];
  },
): Promise<Database> {
  const applied = options.migrate
    ? await migrate(url, options.connectTimeoutMs, ENTITIES, (wait) =>
        options.logger?.warn(
          wait,
          `a migration waited ${MIGRATION_LOCK_TIMEOUT_MS / 1000} s for a table that an open transaction has read; rolled back so that the other sessions go on, it runs again in a moment (the oldest open transactions are named)`,
        ),
      )
    : [];
  if (applied.length) options.logger?.info({ applied }, 'migrations applied');
  const orm = await openOrm({
    url,
    entities: ENTITIES,
    poolMax: options.poolMax,
    connectTimeoutMs: options.connectTimeoutMs,
    statementTimeoutMs: options.statementTimeoutMs,
  });
  try {
    const pool = await nativePool(orm);
    const replicas = options.readReplicas?.urls.length
      ? createReadPool({
          primary: pool,
          ...options.readReplicas,
          poolMax: options.poolMax,
          connectTimeoutMs: options.connectTimeoutMs,
          statementTimeoutMs: options.statementTimeoutMs,
          logger: options.logger,
        })
      : null;
    const close = async () => {
      await replicas?.close();
      await closeOrm(orm);
    };
    return { orm, pool, readPool: replicas ?? pool, url, embedded: false, applied, close };
  } catch (error) {
    await closeOrm(orm);
    throw error;
  }
}
