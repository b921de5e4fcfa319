// Root hooks: one PostgreSQL and one migrated database for the whole run; every test builds its
// own data through the factories in support/.
import { connectDatabase, type Database } from '../src/database.ts';
import { startTestPostgres, type TestServer } from './support/database.ts';

let server: TestServer | null = null;
let database: Database | null = null;

/** The suite's migrated database (available inside tests and hooks). */
export function testDb(): Database {
  if (!database) throw new Error('test database not started (root hooks did not run)');
  return database;
}

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(60_000);
    server = await startTestPostgres();
    database = await connectDatabase(server.url, { poolMax: 10, connectTimeoutMs: 3000, migrate: true });
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await database?.close();
    await server?.stop();
  },
};
