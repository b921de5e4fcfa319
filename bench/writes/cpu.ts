// CPU time spent by this process and by the PostgreSQL server, for a CPU-per-record figure that a
// shared machine disturbs much less than records/s. The server's share is read from /proc
// (read-path/cpu.ts), so it is only known when PostgreSQL runs on this machine (the embedded
// cluster, or a local DATABASE_URL server we may read). Elsewhere it is null.
import type { Pool } from 'pg';
import { postmasterOf, processTreeCpuMs } from '../read-path/cpu.ts';

export type CpuClock = () => { nodeMs: number; postgresMs: number | null };

export async function cpuClock(pool: Pool): Promise<CpuClock> {
  const postmaster = await postmasterOf(pool);
  return () => {
    const { user, system } = process.cpuUsage();
    return { nodeMs: (user + system) / 1000, postgresMs: postmaster === null ? null : processTreeCpuMs(postmaster) };
  };
}
