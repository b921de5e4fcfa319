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
    const orm = await openOrm({ url, poolMax: config.db.poolMax, connectTimeoutMs: config.db.connectTimeoutMs });
    if (options.migrate ?? true) {
      const applied = await migrate(orm);
      if (applied.length) logger.info({ applied }, 'migrations applied');
    }
    const pool = await nativePool(orm);
    return {
      orm,
      pool,
      url,
      embedded: embedded !== null,
      close: async () => {
        await orm.close(true);
        await embedded?.stop();
      },
    };
  } catch (error) {
    await embedded?.stop();
    throw error;
  }
}
