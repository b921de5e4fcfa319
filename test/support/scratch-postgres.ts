// A throw-away PostgreSQL for tests and benchmarks: an embedded cluster in a temp dir, or a scratch
// database on the server named by `serverUrl` (created for the run, dropped after it).
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres.ts';
import { postgresIdentity, scratchParent } from '../../src/db/postgres-placement.ts';

export type ScratchPostgres = { url: string; description: string; stop: () => Promise<void> };

export async function startScratchPostgres(options: {
  serverUrl: string | undefined;
  prefix: string;
}): Promise<ScratchPostgres> {
  if (options.serverUrl) return await createScratchDatabase(options.serverUrl, options.prefix);
  const dir = await mkdtemp(join(await scratchParent(await postgresIdentity()), `${options.prefix}-pg-`));
  // The directory goes on every way out: a failed start, a normal stop, and an exit without one.
  const removeNow = () => rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
  process.on('exit', removeNow);
  const remove = async () => {
    process.off('exit', removeNow);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await chmod(dir, 0o755); // as root, PostgreSQL runs as another OS user (postgresIdentity)
    const embedded = await startEmbeddedPostgres({
      dir: join(dir, 'pg'),
      database: options.prefix.replace(/\W/g, '_'),
      persistent: false,
    });
    return {
      url: embedded.url,
      description: `embedded PostgreSQL in ${dir}`,
      stop: async () => {
        await embedded.stop();
        await remove();
      },
    };
  } catch (error) {
    await remove();
    throw error;
  }
}

async function createScratchDatabase(serverUrl: string, prefix: string): Promise<ScratchPostgres> {
  const name = `${prefix.replace(/\W/g, '_')}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await adminQuery(serverUrl, `create database ${name}`);
  const url = databaseUrl(serverUrl, name);
  return {
    url,
    description: `scratch database ${name} on ${new URL(url).host}`,
    stop: () => adminQuery(serverUrl, `drop database if exists ${name} with (force)`),
  };
}

/** The URL of database `name` on the server of `url`. */
export function databaseUrl(url: string, name: string): string {
  const next = new URL(url);
  next.pathname = `/${name}`;
  return next.toString();
}

/**
 * Creates database `name` as a copy of `template` (which nobody may be connected to) on the server
 * of `adminUrl` (a URL of another database there); returns its URL and how to drop it.
 */
export async function cloneDatabase(
  adminUrl: string,
  template: string,
  name: string,
): Promise<{ url: string; drop: () => Promise<void> }> {
  await adminQuery(adminUrl, `create database ${name} template ${template}`);
  return {
    url: databaseUrl(adminUrl, name),
    drop: () => adminQuery(adminUrl, `drop database if exists ${name} with (force)`),
  };
}

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
