// An embedded cluster whose starter was killed (kill -9, the OOM killer) runs on with no owner:
// postgres runs in a session of its own (so that Ctrl-C does not stop it under the service's ordered
// shutdown), so nothing stops it when the service dies without running its exit handlers. The starter
// writes its pid to `<cluster>.owner`; while it lives it is postgres's parent (a dead parent's
// children are re-parented). A running cluster whose parent is not the recorded owner was left
// behind: the next start, and `npm run clean`, stop it (fast shutdown: open transactions roll back).
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EmbeddedPostgresError } from './postgres-placement.ts';

/** Where the pid of the process that started the cluster in `dir` is kept. */
export function ownerFile(dir: string): string {
  return `${dir}.owner`;
}

/** `running`: in use by a live process (`owner`); `left-behind`: postgres `pid` outlived its starter. */
export type ClusterState =
  { state: 'stopped' } | { state: 'running'; pid: number; owner: number } | { state: 'left-behind'; pid: number };

export async function clusterState(dir: string): Promise<ClusterState> {
  const pid = Number((await readFile(join(dir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return { state: 'stopped' };
  // After a crash the pid may belong to another program: only a postgres on this directory counts.
  const args = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => null);
  if (args === null || !args.split('\0').includes(dir)) return { state: 'stopped' };
  const parent = await parentOf(pid);
  const owner = Number((await readFile(ownerFile(dir), 'utf8').catch(() => '')).trim()) || null;
  // No owner file (a cluster started before they were written): left behind once re-parented to init.
  const leftBehind = owner === null ? parent === 1 : parent !== owner;
  return leftBehind ? { state: 'left-behind', pid } : { state: 'running', pid, owner: owner ?? parent ?? 0 };
}

/** Stops the cluster in `dir` if it was left behind; a cluster in use (or stopped) is left alone. */
export async function stopLeftBehindCluster(dir: string, onWarning?: (message: string) => void): Promise<void> {
  const state = await clusterState(dir);
  if (state.state !== 'left-behind') return;
  await stopPostgres(state.pid, dir);
  onWarning?.(
    `stopped the embedded PostgreSQL (pid ${state.pid}) in ${dir}: the process that started it had ended without stopping it`,
  );
}

/** A fast shutdown (SIGINT), then an immediate one (SIGQUIT) if it has not ended within a minute. */
async function stopPostgres(pid: number, dir: string): Promise<void> {
  for (const [signal, waitMs] of [
    ['SIGINT', 60_000],
    ['SIGQUIT', 10_000],
  ] as const) {
    try {
      process.kill(pid, signal);
    } catch {
      return; // already gone
    }
    for (const end = Date.now() + waitMs; Date.now() < end; await sleep(100)) if (!alive(pid)) return;
  }
  throw new EmbeddedPostgresError(
    `The embedded PostgreSQL (pid ${pid}) left running in ${dir} does not stop; stop it yourself (kill ${pid})`,
  );
}

/** A process that has not exited (a zombie, exited but not yet reaped by its new parent, has). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc: kill(0) is all there is
  }
}

/** The parent pid from /proc/<pid>/stat (the fields after the parenthesised command name). */
async function parentOf(pid: number): Promise<number | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  const parent = stat ? Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) : NaN;
  return Number.isInteger(parent) ? parent : null;
}
