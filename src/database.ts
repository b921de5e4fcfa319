// Opens the database the configuration names (or the embedded one), migrated and ready.
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import pg, { type Pool } from 'pg';
import type { Config } from './config.ts';
import { type EmbeddedDatabase, startEmbeddedPostgres } from './db/embedded-postgres.ts';
import { migrate, nativePool, openOrm, type Orm } from './db/orm.ts';
import type { Logger } from './logger.ts';

export type Database = {
  orm: Orm;
  pool: Pool;
  url: string;
  embedded: boolean;
  close: () => Promise<void>;
};

export async function openDatabase(config: Config, logger: Logger, options: { migrate?: boolean } = {}): Promise<Database> {
  let embedded: EmbeddedDatabase | null = null;
  let url = config.databaseUrl ?? (await runningEmbeddedUrl(config.dataDir));
  const urlFile = resolve(config.dataDir, 'embedded-url');
  if (!url) {
    const dir = `${config.dataDir}/pg`;
    logger.info({ dir }, 'starting embedded PostgreSQL');
    embedded = await startEmbeddedPostgres({ dir, database: 'lods', persistent: true, onLog: (m) => logger.trace({ pg: m.trim() }, 'postgres') });
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
    const db = await connectDatabase(url, { poolMax: config.db.poolMax, connectTimeoutMs: config.db.connectTimeoutMs, statementTimeoutMs: config.db.statementTimeoutMs, migrate: options.migrate ?? true, logger });
    return {
      ...db,
      embedded: embedded !== null,
      close: async () => {
        await db.close();
        await stopEmbedded();
      },
    };
  } catch (error) {
    await stopEmbedded();
    throw error;
  }
}

/** The URL of an embedded cluster another process of ours is running on this data dir, if any. */
async function runningEmbeddedUrl(dataDir: string): Promise<string | undefined> {
  const urlFile = resolve(dataDir, 'embedded-url');
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

/** Opens MikroORM on `url` (migrating it unless told not to). */
export async function connectDatabase(
  url: string,
  options: { poolMax: number; connectTimeoutMs: number; statementTimeoutMs?: number; migrate: boolean; logger?: Logger },
): Promise<Database> {
  const orm = await openOrm({ url, poolMax: options.poolMax, connectTimeoutMs: options.connectTimeoutMs });
  try {
    if (options.migrate) {
      const applied = await migrate(orm);
      if (applied.length) options.logger?.info({ applied }, 'migrations applied');
    }
    const pool = await nativePool(orm);
    if (options.statementTimeoutMs) await applyStatementTimeout(pool, options.statementTimeoutMs);
    return { orm, pool, url, embedded: false, close: () => orm.close(true) };
  } catch (error) {
    await orm.close(true);
    throw error;
  }
}

/**
 * Bounds every statement of the pool (a runaway query then frees its connection instead of holding
 * it). The setting travels in each connection's start-up message, so it survives `reset all`; the
 * connections opened before (the migrations', which may rightly run longer) are closed and reopened
 * on demand with it.
 */
async function applyStatementTimeout(pool: Pool, ms: number): Promise<void> {
  pool.options.statement_timeout = ms;
  const open = await Promise.all(Array.from({ length: pool.idleCount }, () => pool.connect()));
  for (const client of open) client.release(true);
}
