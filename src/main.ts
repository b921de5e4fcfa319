// read config -> open database -> start the API (and later the worker) -> listen -> shut down in order.
import { loadConfig, ConfigError } from './config.ts';
import { openDatabase, type Database } from './database.ts';
import { releaseSignalHooks } from './db/embedded-postgres.ts';
import { ensureDemo } from './demo.ts';
import { createLogger } from './logger.ts';
import { type Api, startApi } from './service.ts';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
  const logger = createLogger({ level: config.logLevel, pretty: !config.production && process.stdout.isTTY });

  let db: Database | null = null;
  let api: Api | null = null;
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    try {
      await api?.close();
      await db?.close();
      logger.info('stopped');
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };

  db = await openDatabase(config, logger);
  if (db.embedded) releaseSignalHooks();
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  const demoKey = db.embedded ? await ensureDemo(db, { dataDir: config.dataDir, count: config.demoSeedCount, logger }) : null;
  api = await startApi(config, db, logger);
  logger.info({ url: api.url, role: config.role }, 'listening');
  if (demoKey) {
    process.stdout.write(
      `\nLearning Opportunities Data Service is running at ${api.url}\n` +
        `Demo API key (all scopes; kept in ${config.dataDir}/demo-key): ${demoKey}\n\n` +
        `  curl -H "Authorization: Bearer ${demoKey}" "${api.url}/v1/learning-opportunities?limit=2"\n\n`,
    );
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
