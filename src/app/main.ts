// read config -> open database -> start pg-boss -> start the API and/or the delivery worker (ROLE, or
// `--role api|worker|all`) -> shut down in order: HTTP, worker, pg-boss, database.
import { constants, unwatchFile, watchFile } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import type { PgBoss } from 'pg-boss';
import { announce } from './banner.ts';
import { type Config, loadConfig, ConfigError } from '../kernel/config.ts';
import { embeddedUrlFile, openDatabase, type Database } from './database.ts';
import { ensureDemo } from './demo.ts';
import { createLogger, type Logger } from '../kernel/logger.ts';
import { checkPortFree } from '../http/listen.ts';
import { type RetentionJob, startRetentionJob } from '../retention/prune-job.ts';
import { type Api, startApi } from './service.ts';
import { exitCodeOf, onStopSignals } from '../kernel/stop-signals.ts';
import { createFanOut } from '../webhooks/delivery/fan-out.ts';
import { startBoss } from '../webhooks/queue/boss.ts';
import { prepareSecrets } from '../webhooks/secrets/seal-secrets.ts';
import { resolveSecretKeyring } from '../webhooks/secrets/secret-keys.ts';
import { type DeliveryWorker, startDeliveryWorker } from '../webhooks/delivery/worker.ts';

const USAGE = `Usage: npm start [-- --role all|api|worker]

Starts the service: the API and the delivery worker (ROLE, or --role, picks one of them).
Every other setting is an environment variable (docs/configuration.md); without DATABASE_URL
an embedded PostgreSQL runs under ./.data.
`;

/** The arguments of `npm start`: `--role worker` (or `--role=worker`) overrides ROLE; `--help` prints the usage; nothing else is taken. */
function parseArguments(argv: string[]): { role?: 'all' | 'api' | 'worker'; help?: true } {
  if (argv.some((a) => a === '--help' || a === '-h')) return { help: true };
  let role: 'all' | 'api' | 'worker' | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg !== '--role' && !arg.startsWith('--role='))
      throw new ConfigError([`${arg}: unknown argument (npm start takes only --role all|api|worker; see --help)`]);
    const value = arg.includes('=') ? arg.slice('--role='.length) : argv[++i];
    if (value !== 'all' && value !== 'api' && value !== 'worker')
      throw new ConfigError([`--role: must be all, api or worker, got ${JSON.stringify(value ?? '')}`]);
    role = value;
  }
  return { role };
}

async function main(): Promise<void> {
  let config;
  let role;
  try {
    const args = parseArguments(process.argv.slice(2));
    if (args.help) {
      process.stdout.write(USAGE);
      process.exit(0);
    }
    config = loadConfig();
    role = args.role ?? config.role;
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
  const logger = createLogger({ level: config.logLevel, pretty: !config.production && process.stdout.isTTY });

  // The embedded PostgreSQL's DATA_DIR, a file or out of reach, is a bad setting (it was a stack trace).
  if (!config.databaseUrl) await requireDataDir(config.dataDir);
  // A second `npm start` on a busy PORT fails here, before a database, queue or worker starts.
  if (role !== 'worker') await checkPortFree(config);

  const parts: Parts = { db: null, api: null, boss: null, worker: null, retention: null };
  const shutdown = async (signal: string) => {
    logger.info({ signal }, 'shutting down');
    try {
      await stopParts(parts, config);
      logger.info('stopped');
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };

  parts.db = await openDatabase(config, logger, { schema: 'migrate', readReplicas: role !== 'worker' });
  // No DATABASE_URL and no cluster of our own: another `npm start` runs the one on this DATA_DIR.
  // When that process stops, so does its cluster (it removes the URL file then), and this one stops too.
  if (!config.databaseUrl && !parts.db.embedded) {
    logger.warn(
      { dataDir: config.dataDir },
      'using the embedded PostgreSQL another process runs on DATA_DIR: it stops when that process stops, and so does this one',
    );
    followOwner(embeddedUrlFile(config.dataDir), () => {
      logger.warn(
        { dataDir: config.dataDir },
        'the embedded PostgreSQL of DATA_DIR stopped with its process: stopping',
      );
      void shutdown('embedded PostgreSQL stopped');
    });
  }
  onStopSignals(
    (signal) => void shutdown(signal),
    (signal) => {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(exitCodeOf(signal));
    },
  );
  try {
    await startParts(parts, parts.db, config, role, logger);
  } catch (error) {
    // What started stops (the embedded PostgreSQL with it) before the one line and exit 1 below.
    await stopParts(parts, config).catch((stopError: unknown) => logger.error({ err: stopError }, 'stopping failed'));
    throw error;
  }
}

/** Calls `gone` once `file` no longer exists (checked every second; the timer keeps no process alive). */
function followOwner(file: string, gone: () => void): void {
  watchFile(file, { interval: 1000, persistent: false }, (now) => {
    if (now.nlink > 0) return;
    unwatchFile(file);
    gone();
  });
}

type Parts = {
  db: Database | null;
  api: Api | null;
  boss: PgBoss | null;
  worker: DeliveryWorker | null;
  retention: RetentionJob | null;
};

/** Shuts down in order: HTTP, worker, retention, pg-boss, database. */
async function stopParts(parts: Parts, config: Config): Promise<void> {
  await parts.api?.close();
  // In-flight deliveries finish (each is bounded by WEBHOOK_TIMEOUT_MS) and their attempts commit.
  await parts.worker?.stop();
  await parts.retention?.stop();
  await parts.boss?.stop({ graceful: true, timeout: config.shutdownQueueTimeoutMs });
  await parts.db?.close();
}

/** Secrets, pg-boss, the worker and retention (unless api), the API (unless worker); each in `parts` once started. */
async function startParts(parts: Parts, db: Database, config: Config, role: Config['role'], logger: Logger) {
  // Before anything is served: plain secrets sealed, every sealed one openable (seal-secrets.ts).
  const secrets = await resolveSecretKeyring(config, logger);
  await prepareSecrets(db.pool, secrets, logger);

  // The API needs pg-boss too: a mutation inserts its delivery jobs in its own transaction.
  const boss = (parts.boss = await startBoss({
    url: db.url,
    config: config.webhooks,
    logger,
    supervise: role !== 'api',
  }));
  if (role !== 'api')
    parts.worker = await startDeliveryWorker({ boss, pool: db.pool, config: config.webhooks, logger, secrets });
  if (role !== 'api')
    parts.retention = await startRetentionJob({ boss, pool: db.pool, retention: config.retention, logger });
  if (role === 'worker') return void logger.info({ role }, 'delivery worker running');

  // A demo key only on the embedded default of a development start: never on a real database.
  const demoKey =
    !config.databaseUrl && !config.production
      ? await ensureDemo(db, { dataDir: config.dataDir, count: config.demoSeedCount, logger })
      : null;
  const api = (parts.api = await startApi(config, db, logger, createFanOut({ boss, orm: db.orm }), {
    boss,
    secrets,
    allowPrivateTargets: config.webhooks.allowPrivateTargets,
  }));
  announce({ api, config, demoKey, logger });
}

/** DATA_DIR as a directory this process can write in, or a ConfigError naming it. */
async function requireDataDir(dataDir: string): Promise<void> {
  try {
    await mkdir(dataDir, { recursive: true });
    await access(dataDir, constants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new ConfigError([
      `DATA_DIR: ${dataDir} cannot be used as a directory (${code}): set it to one this user can write in`,
    ]);
  }
}

main().catch((error: unknown) => {
  // A setting found wrong only once used (a HOST that is no address here): exits as a bad setting does.
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(78);
  }
  // A failure the operator can act on (OperatorError: a port in use, PostgreSQL that cannot run) has a sentence for a stack.
  process.stderr.write(`fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
