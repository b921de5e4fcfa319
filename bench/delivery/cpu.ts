// CPU time, the figure that stays meaningful on a shared machine where throughput swings with the
// neighbours' load: this process's (the worker in the drain, the bare loop in the baseline) from
// process.cpuUsage(), and the PostgreSQL server's from /proc (read-path/cpu.ts: its postmaster,
// reaped children included, and the backends alive), when the server runs on this machine (embedded) and /proc is
// readable; null otherwise.
import type { Pool } from 'pg';
import { postmasterOf, processTreeCpuMs } from '../read-path/cpu.ts';

export async function createCpuMeter(pool: Pool, embedded: boolean) {
  const postmaster = embedded ? await postmasterOf(pool) : null;
  const databaseMs = (): number | null => (postmaster === null ? null : processTreeCpuMs(postmaster));
  const processMs = () => {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1000;
  };

  /** Starts a measurement; the returned function gives µs of CPU per item for `items` items. */
  return () => {
    const [process0, database0] = [processMs(), databaseMs()];
    return (items: number) => {
      const database1 = databaseMs();
      return {
        processUs: ((processMs() - process0) / items) * 1000,
        databaseUs: database0 === null || database1 === null ? null : ((database1 - database0) / items) * 1000,
      };
    };
  };
}
