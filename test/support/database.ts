// A real PostgreSQL for the suite: a throw-away embedded cluster by default, or a fresh database on
// the server named by DATABASE_URL (created for this run, dropped after it).
import { startScratchPostgres, type ScratchPostgres } from '../../src/db/scratch-postgres.ts';

export type TestServer = ScratchPostgres;

export function startTestPostgres(): Promise<TestServer> {
  return startScratchPostgres({ serverUrl: process.env.DATABASE_URL, prefix: 'lods-test' });
}
