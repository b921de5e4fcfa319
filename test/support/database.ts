// A real PostgreSQL for the suite: one server per run (a throw-away embedded cluster, or a fresh
// database on the server named by DATABASE_URL), one migrated template database on it, and a
// clone of that template for every test file. Files never see each other's rows, so they can run
// in parallel (`npm test` runs mocha --parallel) and a test may empty its own tables at will.
import { randomBytes } from 'node:crypto';
import { connectDatabase } from '../../src/app/database.ts';
import { cloneDatabase, databaseUrl, startScratchPostgres, type ScratchPostgres } from './scratch-postgres.ts';

export type TestServer = ScratchPostgres & { adminUrl: string; template: string };

/** Starts the server and migrates the template (the database `url` names). */
export async function startTestPostgres(): Promise<TestServer> {
  const serverUrl = process.env.DATABASE_URL;
  const server = await startScratchPostgres({ serverUrl, prefix: 'lods-test' });
  try {
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

/** A fresh migrated database for one test file, cloned from the template. */
export function cloneTestDatabase(server: {
  adminUrl: string;
  template: string;
}): Promise<{ url: string; drop: () => Promise<void> }> {
  return cloneDatabase(server.adminUrl, server.template, `lods_test_${process.pid}_${randomBytes(4).toString('hex')}`);
}
