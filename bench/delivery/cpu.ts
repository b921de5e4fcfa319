// CPU time, the figure that stays meaningful on a shared machine where throughput swings with the
// neighbours' load: this process's (the worker in the drain, the bare loop in the baseline) from
// process.cpuUsage(), and the PostgreSQL server's from /proc (its postmaster, reaped children
// included, and the backends alive), when the server runs on this machine (embedded) and /proc is
// readable; null otherwise.
import { readdirSync, readFileSync } from 'node:fs';
import type { Pool } from 'pg';

type Ticks = { ppid: number; own: number; reaped: number };

function ticks(pid: number): Ticks | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return { ppid: Number(fields[1]), own: Number(fields[11]) + Number(fields[12]), reaped: Number(fields[13]) + Number(fields[14]) };
  } catch {
    return null;
  }
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const TICK_MS = 10;

export async function createCpuMeter(pool: Pool, embedded: boolean) {
  const { rows } = await pool.query<{ pid: number }>('select pg_backend_pid() as pid');
  const postmaster = embedded ? (ticks(rows[0]!.pid)?.ppid ?? null) : null;

  const databaseMs = (): number | null => {
    if (postmaster === null) return null;
    let total = 0;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const pid = Number(entry);
      const t = ticks(pid);
      if (!t) continue;
      if (pid === postmaster) total += t.own + t.reaped;
      else if (t.ppid === postmaster) total += t.own;
    }
    return total * TICK_MS;
  };
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
