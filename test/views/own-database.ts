// A database of a test file's own (a clone of the migrated template), as the list oracle has: these
// files write thousands of events or rewrite the schema, which the other files of a serial run
// (one shared database) must not see. An API over it and a key with catalog:read.
import type { Api } from '../../src/app/service.ts';
import { connectDatabase, type Database } from '../../src/app/database.ts';
import { createTestKey, startTestApi, type TestApiOptions } from '../support/api.ts';
import { cloneTestDatabase } from '../support/database.ts';

export type OwnDatabase = { db: Database; api: Api; key: string; close: () => Promise<void> };

export async function startOnOwnDatabase(options: TestApiOptions = {}): Promise<OwnDatabase> {
  const clone = await cloneTestDatabase(
    JSON.parse(process.env.LODS_TEST_POSTGRES!) as { adminUrl: string; template: string },
  );
  const db = await connectDatabase(clone.url, { poolMax: 10, connectTimeoutMs: 3000, migrate: false });
  const api = await startTestApi({ ...options, db });
  // Far above the default limit: the tests poll the feed tightly (see feed/feed-support.ts).
  const key = await createTestKey(['catalog:read'], db, 1_000_000);
  return {
    db,
    api,
    key,
    close: async () => {
      await api.close();
      await db.close();
      await clone.drop();
    },
  };
}
