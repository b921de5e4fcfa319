// The benchmark's own PostgreSQL: a throw-away embedded cluster in a temp dir, or a scratch database
// on the server named by DATABASE_URL (created for this run, dropped after it).
import { startScratchPostgres, type ScratchPostgres } from '../../test/support/scratch-postgres.ts';

export type BenchPostgres = ScratchPostgres;

export function startBenchPostgres(serverUrl: string | undefined): Promise<BenchPostgres> {
  return startScratchPostgres({ serverUrl, prefix: 'lods-bench' });
}
