// CPU time spent by this process and by the PostgreSQL server, for a CPU-per-record figure that a
// shared machine disturbs much less than records/s. The server's share is read from /proc, so it is
// only known when PostgreSQL runs on this machine (the embedded cluster, or a local DATABASE_URL
// server we may read): its postmaster's own time plus that of its children, living (their stat) and
// exited (the postmaster's cutime/cstime, since it reaps them). Elsewhere it is null.
import { readdirSync, readFileSync } from 'node:fs';
import type { Pool } from 'pg';

export type CpuClock = () => { nodeMs: number; postgresMs: number | null };

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** utime, stime, cutime, cstime and the parent pid of a process, or null if it is gone or unreadable. */
function stat(pid: number | string): { ppid: number; own: number; children: number } | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return { ppid: Number(fields[1]), own: (Number(fields[11]) + Number(fields[12])) * TICK_MS, children: (Number(fields[13]) + Number(fields[14])) * TICK_MS };
  } catch {
    return null;
  }
}

export async function cpuClock(pool: Pool): Promise<CpuClock> {
  const backend = (await pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  const postmaster = stat(backend)?.ppid;
  const postgresMs = () => {
    const main = postmaster === undefined ? null : stat(postmaster);
    if (!main) return null;
    let total = main.own + main.children;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const child = stat(entry);
      if (child && child.ppid === postmaster) total += child.own;
    }
    return total;
  };
  return () => {
    const { user, system } = process.cpuUsage();
    return { nodeMs: (user + system) / 1000, postgresMs: postgresMs() };
  };
}
