// A real PostgreSQL for the suite: one server per run (a throw-away embedded cluster, or a fresh
// database on the server named by DATABASE_URL), one migrated template database on it, and a
// clone of that template for every test file. Files never see each other's rows, so they can run
// in parallel (`npm test` runs mocha --parallel) and a test may empty its own tables at will.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { connectDatabase } from '../../src/app/database.ts';
import { cloneDatabase, databaseUrl, startScratchPostgres, type ScratchPostgres } from './scratch-postgres.ts';

export type TestServer = ScratchPostgres & { adminUrl: string; template: string };

/** Starts the server and migrates the template (the database `url` names). */
export async function startTestPostgres(): Promise<TestServer> {
  const serverUrl = process.env.DATABASE_URL;
  const server = await startScratchPostgres({ serverUrl, prefix: 'lods-test' });
  try {
    if (!serverUrl) await skipDurability(server.url);
    const template = await connectDatabase(server.url, { poolMax: 2, connectTimeoutMs: 3000, migrate: true });
    await template.close();
    // Clones are made from another database (DATABASE_URL's own, or the embedded cluster's
    // maintenance database): a clone fails while its template has sessions.
    const adminUrl = serverUrl ?? databaseUrl(server.url, 'postgres');
    return { ...server, adminUrl, template: new URL(server.url).pathname.slice(1) };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/**
 * The suite's throw-away cluster neither flushes nor syncs: a commit waiting for its WAL to reach the
 * disk took 4-10 ms on a busy test machine, and the suite commits tens of thousands of times. Nothing
 * in it survives the run, and no test stops this cluster abruptly (the tests of crashes kill the
 * service's processes or clusters of their own). A server named by DATABASE_URL is left as it is
 * (each clone skips only the wait: cloneTestDatabase).
 */
async function skipDurability(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // One statement per query: ALTER SYSTEM refuses to run in the implicit transaction of several.
    for (const setting of ['fsync', 'synchronous_commit', 'full_page_writes'])
      await client.query(`alter system set ${setting} = off`);
    await client.query('select pg_reload_conf()');
  } finally {
    await client.end();
  }
}

/**
 * A fresh migrated database for one test file, cloned from the template. Its sessions do not wait
 * for their commits to reach the disk (synchronous_commit off: a crash of the server could lose the
 * last commits, never corrupt anything), on a DATABASE_URL server too.
 */
export async function cloneTestDatabase(server: {
  adminUrl: string;
  template: string;
}): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `lods_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const clone = await cloneDatabase(server.adminUrl, server.template, name);
  const client = new pg.Client({ connectionString: server.adminUrl });
  await client.connect();
  try {
    await client.query(`alter database ${name} set synchronous_commit = off`);
  } finally {
    await client.end();
  }
  return clone;
}

/**
 * Resolves once a backend of this database waits for a lock in a statement whose text holds
 * `fragment`: a test that builds a deadlock waits for its first side to queue before it closes the
 * cycle (the side that waits first runs the deadlock check first, and is the victim).
 */
export async function waitingForLock(
  pool: Pick<pg.Pool, 'query'>,
  fragment: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await pool.query(
      `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and position($1 in query) > 0`,
      [fragment],
    );
    if (rows.length) return;
    if (Date.now() > deadline)
      throw new Error(`no statement with "${fragment}" waited for a lock within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
