// CPU time of a process (user + system) from /proc, so that each server's CPU per request can be
// reported beside its throughput: a shared machine moves throughput around much more than it moves
// the CPU a request costs. Null where /proc is not available.
import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

export function processCpuMs(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}
