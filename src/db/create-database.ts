// A connection to a database that may not exist yet: `migrate`, the service's start and the embedded
// cluster create it on first use (no other command does: a mistyped DATABASE_URL must not get one).
import pg from 'pg';

/** PostgreSQL's error code for a connection to a database that does not exist. */
export const NO_SUCH_DATABASE = '3D000';
// Several processes starting together on a new database all find it missing and all create it:
// PostgreSQL lets one through and fails the others with a duplicate (42P04, or 23505 on
// pg_database's name index when they reach the catalog together), which means it exists now.
const ALREADY_EXISTS = new Set(['42P04', '23505']);
const INSUFFICIENT_PRIVILEGE = '42501';

/** The database a PostgreSQL URL names. */
export const databaseName = (url: string): string => decodeURIComponent(new URL(url).pathname.slice(1));

/**
 * A connected client on `url`, the database created first (from the server's `postgres` database)
 * when it does not exist. MikroORM's own ensureDatabase is not used: when its create fails, it stays
 * connected to `postgres`, and the migrations that follow would run there.
 */
export async function connectCreatingDatabase(
  url: string,
  options: { connectTimeoutMs?: number; applicationName?: string } = {},
): Promise<pg.Client> {
  const client = () => {
    const c = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: options.connectTimeoutMs,
      application_name: options.applicationName,
    });
    c.on('error', () => {}); // a connection lost later fails the caller's statement in flight, which reports it
    return c;
  };
  const first = client();
  try {
    await first.connect();
    return first;
  } catch (error) {
    await first.end().catch(() => {});
    if ((error as { code?: string }).code !== NO_SUCH_DATABASE) throw error;
  }
  const server = new URL(url);
  server.pathname = '/postgres';
  const admin = new pg.Client({
    connectionString: server.toString(),
    connectionTimeoutMillis: options.connectTimeoutMs,
  });
  await admin.connect();
  try {
    await admin.query(`create database ${pg.escapeIdentifier(databaseName(url))}`);
  } catch (error) {
    const code = (error as { code?: string }).code ?? '';
    // Said as the missing database it is (callers name DATABASE_URL), not as pg's bare refusal.
    if (code === INSUFFICIENT_PRIVILEGE)
      throw Object.assign(
        new Error(
          `database "${databaseName(url)}" does not exist, and this role may not create it: create the database, or grant the role CREATEDB`,
          { cause: error },
        ),
        { code: NO_SUCH_DATABASE },
      );
    if (!ALREADY_EXISTS.has(code)) throw error;
  } finally {
    await admin.end();
  }
  const second = client();
  await second.connect();
  return second;
}
