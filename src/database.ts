// Opens the database the configuration names (or the embedded one), migrated and ready.
import type { Pool } from 'pg';
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
  let url = config.databaseUrl;
  if (!url) {
    const dir = `${config.dataDir}/pg`;
    logger.info({ dir }, 'starting embedded PostgreSQL');
    embedded = await startEmbeddedPostgres({ dir, database: 'lods', persistent: true, onLog: (m) => logger.trace({ pg: m.trim() }, 'postgres') });
    url = embedded.url;
  }
  try {
    const db = await connectDatabase(url, { poolMax: config.db.poolMax, connectTimeoutMs: config.db.connectTimeoutMs, migrate: options.migrate ?? true, logger });
    return {
      ...db,
      embedded: embedded !== null,
      close: async () => {
        await db.close();
        await embedded?.stop();
      },
    };
  } catch (error) {
    await embedded?.stop();
    throw error;
  }
}

/** Opens MikroORM on `url` (migrating it unless told not to). */
export async function connectDatabase(url: string, options: { poolMax: number; connectTimeoutMs: number; migrate: boolean; logger?: Logger }): Promise<Database> {
  const orm = await openOrm({ url, poolMax: options.poolMax, connectTimeoutMs: options.connectTimeoutMs });
  try {
    if (options.migrate) {
      const applied = await migrate(orm);
      if (applied.length) options.logger?.info({ applied }, 'migrations applied');
    }
    const pool = await nativePool(orm);
    return { orm, pool, url, embedded: false, close: () => orm.close(true) };
  } catch (error) {
    await orm.close(true);
    throw error;
  }
}
