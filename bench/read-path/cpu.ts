// CPU time of a process (user + system) from /proc, so that each server's CPU per request (and the
// database's, and the load generator's) can be reported beside its throughput: a shared machine
// moves throughput around much more than it moves the CPU a request costs. Null where /proc is not
// available. The one reader of /proc for every benchmark (bench:writes and bench:delivery too).
import { readdirSync, readFileSync } from 'node:fs';
import type { Pool } from 'pg';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** The fields of /proc/PID/stat after the command name: [state, ppid, ...]; null when gone. */
function statFields(pid: number | string): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  } catch {
    return null;
  }
}

const cpuMsOf = (fields: string[]) => ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;

export function processCpuMs(pid: number): number | null {
  const fields = statFields(pid);
  return fields ? cpuMsOf(fields) : null;
}

/** The parent of a process (the postmaster of a PostgreSQL backend), or null. */
export function parentPid(pid: number): number | null {
  const fields = statFields(pid);
  return fields ? Number(fields[1]) : null;
}

/**
 * CPU time of a process and its children (PostgreSQL's postmaster and its backends and workers):
 * those alive now, plus those that have exited, which the parent's cutime/cstime keep once it has
 * reaped them (a pool closing idle connections mid-run would otherwise take their time away, and a
 * run's figure could come out negative). Null where /proc is not available.
 */
export function processTreeCpuMs(pid: number): number | null {
  const fields = statFields(pid);
  if (fields === null) return null;
  let total = cpuMsOf(fields) + ((Number(fields[13]) + Number(fields[14])) * 1000) / TICKS_PER_SECOND;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(entry);
    if (fields && Number(fields[1]) === pid) total += cpuMsOf(fields);
  }
  return total;
}

/** The postmaster of the server `pool` is connected to (the parent of its backend), or null. */
export async function postmasterOf(pool: Pool): Promise<number | null> {
  const { rows } = await pool.query<{ pid: number }>('select pg_backend_pid() as pid');
  return parentPid(rows[0]!.pid);
}
