// CPU time, the figure that stays meaningful on a shared machine where throughput swings with the
// neighbours' load: this process's (the worker in the drain, the bare loop in the baseline) from
// process.cpuUsage(), and the PostgreSQL server's from /proc (read-path/cpu.ts: its postmaster,
// reaped children included, and the backends alive), when the server runs on this machine (embedded) and /proc is
// readable; on a server elsewhere on this machine (DATABASE_URL), the backends of the run's own database
// (backendsCpuMs); null otherwise.
import type { Pool } from 'pg';
import { postmasterOf, processCpuMs, processTreeCpuMs } from '../read-path/cpu.ts';

export async function createCpuMeter(pool: Pool, embedded: boolean) {
  const postmaster = embedded ? await postmasterOf(pool) : null;
  // A reading of the database's CPU: the postmaster's tree (embedded), or per backend (DATABASE_URL).
  const databaseMs = async (): Promise<Map<number, number> | null> => {
    if (postmaster === null) return await backendsCpuMs(pool);
    const ms = processTreeCpuMs(postmaster);
    return ms === null ? null : new Map([[postmaster, ms]]);
  };
  const processMs = () => {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1000;
  };

  /** Starts a measurement; the returned function gives µs of CPU per item for `items` items. */
  return async () => {
    const [process0, database0] = [processMs(), await databaseMs()];
    return async (items: number) => {
      const database1 = await databaseMs();
      // A backend that was not there at the start counts from 0 (it was opened meanwhile).
      const databaseDeltaMs =
        database0 === null || database1 === null
          ? null
          : [...database1].reduce((sum, [pid, ms]) => sum + ms - (database0.get(pid) ?? 0), 0);
      return {
        processUs: ((processMs() - process0) / items) * 1000,
        databaseUs: databaseDeltaMs === null ? null : (databaseDeltaMs / items) * 1000,
      };
    };
  };
}

/**
 * A shared server on this machine (DATABASE_URL): the CPU of each backend connected to this run's
 * own scratch database (pid -> ms), read from /proc; null when the server's processes are not
 * visible here. The server's other databases (other people's runs) are left out, which the
 * postmaster's tree would not; a backend that exits during a measurement takes its time with it
 * (the run's pools keep their connections through a drain).
 */
async function backendsCpuMs(pool: Pool): Promise<Map<number, number> | null> {
  const { rows } = await pool.query<{ pid: number }>(
    'select pid from pg_stat_activity where datname = current_database()',
  );
  const times = new Map<number, number>();
  for (const { pid } of rows) {
    const ms = processCpuMs(pid);
    if (ms !== null) times.set(pid, ms);
  }
  return times.size === 0 ? null : times;
}
