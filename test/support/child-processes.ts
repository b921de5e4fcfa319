// Every process the tests start, in a process group of its own that the suite ends on every way out.
//
// spawnChild and execFileChild are child_process's spawn and execFile with `detached: true`: the
// child leads a new process group (and session), and that group is registered here until it is
// empty. The groups still registered are stopped (their stop signal, SIGTERM unless adoptGroup said
// otherwise, then SIGKILL for what is left after GRACE_MS):
// - after each test file, once its own after hooks have run (stopAllChildren: a root hook of test/hooks.ts);
// - when this process (a mocha worker, or mocha itself) exits, whatever the reason (process.on('exit'):
//   synchronously, waiting for them to go);
// - when this process gets SIGINT, SIGTERM or SIGHUP; the signal is then raised again, so that the
//   process ends as it would have without this handler.
// In a group of its own a child no longer gets the terminal's Ctrl-C or hang-up (the terminal signals
// its foreground process group only): that is why the signals are handled here. A child is not
// unref'd: its test awaits it, and the event loop waits for it, as before.
import { type ChildProcess, spawn, type SpawnOptions } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';

/** How long a group has, after its stop signal, before it gets SIGKILL. */
export const GRACE_MS = 5000;
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * The registered groups, by process group id (the pid of their leader): the signal that stops each,
 * and whether its leader has exited (and been reaped). A group is forgotten once it is empty; until
 * then its id is not handed out again, and after its leader's exit a process with that pid is
 * another one, whose group is not ours (livingGroups, signalGroup).
 */
const groups = new Map<number, { stopSignal: NodeJS.Signals; leaderGone: boolean }>();

/** child_process.spawn, the child in a process group of its own that the suite stops on every way out. */
export const spawnChild = ((command: string, ...rest: unknown[]) => {
  const args = Array.isArray(rest[0]) ? (rest.shift() as string[]) : [];
  const options = (rest[0] ?? {}) as Parameters<typeof spawn>[2];
  return trackChild(spawn(command, args, { ...options, detached: true }));
}) as typeof spawn;

export type ExecFileChildOptions = Omit<SpawnOptions, 'stdio' | 'detached'> & {
  /** Ends the child's process group with `killSignal` after this many ms (0: never). */
  timeout?: number;
  killSignal?: NodeJS.Signals;
  /** Bytes of stdout or of stderr beyond which the group is ended and the run fails (default 1 MiB). */
  maxBuffer?: number;
};
export type ExecFileChildError = Error & {
  code?: number | string | null;
  signal?: NodeJS.Signals | null;
  killed?: boolean;
  cmd?: string;
  stdout?: string;
  stderr?: string;
};
type ExecFileChildCallback = (error: ExecFileChildError | null, stdout: string, stderr: string) => void;
type ExecFileChildResult = Promise<{ stdout: string; stderr: string }> & { child: ChildProcess };

/**
 * child_process.execFile (whose options never reach spawn's `detached`) for a process group of its
 * own, as spawnChild's: stdout and stderr as UTF-8 text, the same error (`code`: the exit code, or
 * the error's own such as ENOENT; `signal`, `killed`, `cmd`), and util.promisify gives
 * `{ stdout, stderr }` with the child as `.child`.
 */
function execFileChildWithCallback(
  file: string,
  args: readonly string[] = [],
  options: ExecFileChildOptions = {},
  callback?: ExecFileChildCallback,
): ChildProcess {
  const { timeout = 0, killSignal = 'SIGTERM', maxBuffer = 1024 * 1024, ...spawnOptions } = options;
  const child = spawnChild(file, args, { ...spawnOptions, stdio: 'pipe' });
  const cmd = [file, ...args].join(' ');
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let failure: ExecFileChildError | null = null;
  let killed = false;
  const end = (cause: ExecFileChildError) => {
    failure ??= cause;
    killed = true;
    if (child.pid !== undefined) signalGroup(child.pid, killSignal);
  };
  const collect = (chunks: Buffer[], name: string) => {
    let length = 0;
    return (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
      if (length > maxBuffer)
        end(
          Object.assign(new RangeError(`${name} maxBuffer length exceeded`), {
            code: 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER',
          }),
        );
    };
  };
  child.stdout!.on('data', collect(out, 'stdout'));
  child.stderr!.on('data', collect(err, 'stderr'));
  const timer = timeout > 0 ? setTimeout(() => end(new Error(`Command timed out: ${cmd}`)), timeout) : null;
  let done = false;
  const finish = (code: number | null, signal: NodeJS.Signals | null) => {
    if (done) return;
    done = true;
    if (timer) clearTimeout(timer);
    const [stdout, stderr] = [Buffer.concat(out).toString('utf8'), Buffer.concat(err).toString('utf8')];
    let error = failure;
    if (!error && (code !== 0 || signal))
      error = Object.assign(new Error(`Command failed: ${cmd}\n${stderr}`), { code, signal });
    if (error) Object.assign(error, { killed, cmd, ...(error.code === undefined && { code, signal }) });
    callback?.(error, stdout, stderr);
  };
  child.once('error', (error: NodeJS.ErrnoException) => {
    failure ??= error as ExecFileChildError;
    // A child that never started has no 'close' to wait for.
    if (child.pid === undefined) finish(null, null);
  });
  child.once('close', finish);
  return child;
}

function execFileChildAsync(
  file: string,
  args: readonly string[] = [],
  options: ExecFileChildOptions = {},
): ExecFileChildResult {
  let child: ChildProcess | undefined;
  const result = new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
    child = execFileChildWithCallback(file, args, options, (error, stdout, stderr) =>
      error ? reject(Object.assign(error, { stdout, stderr })) : resolve({ stdout, stderr }),
    );
  });
  return Object.assign(result, { child: child! });
}

/** execFile in a process group of its own: see execFileChildWithCallback; util.promisify(execFileChild) works. */
export const execFileChild = Object.assign(execFileChildWithCallback, {
  __promisify__: execFileChildAsync,
  [promisify.custom]: execFileChildAsync,
});

/** Registers the group `child` leads (it was spawned detached); forgotten once the group is empty. */
export function trackChild<C extends ChildProcess>(child: C): C {
  const pgid = child.pid;
  if (pgid === undefined) return child; // it did not start ('error' follows): nothing to stop
  register(pgid, 'SIGTERM');
  child.once('exit', () => {
    const group = groups.get(pgid);
    if (group) group.leaderGone = true;
    forgetOnceEmpty(pgid);
  });
  return child;
}

/** Forgets the group now if it is empty, else checks again a little later (without holding the event loop). */
function forgetOnceEmpty(pgid: number): void {
  if (!groups.has(pgid)) return;
  if (livingGroups([pgid]).length === 0) forget(pgid);
  else setTimeout(() => forgetOnceEmpty(pgid), 100).unref();
}

/**
 * Registers a group that a child of ours started in a session of its own (a PostgreSQL that pg_ctl
 * started), stopped by `stopSignal` as the others; returns how to forget it once it is stopped.
 */
export function adoptGroup(pgid: number, stopSignal: NodeJS.Signals): () => void {
  register(pgid, stopSignal);
  return () => forget(pgid);
}

/** Stops the group `child` leads (its stop signal, SIGKILL after `graceMs`) if it still runs; resolves once it is empty. */
export async function stopChild(child: ChildProcess, graceMs = GRACE_MS): Promise<void> {
  if (child.pid !== undefined) await stopGroups([child.pid], graceMs);
}

/** Stops every registered group (its stop signal, SIGKILL after `graceMs`); resolves once they are empty. */
export async function stopAllChildren(graceMs = GRACE_MS): Promise<void> {
  await stopGroups([...groups.keys()], graceMs);
}

async function stopGroups(all: number[], graceMs: number): Promise<void> {
  // Only registered groups: a forgotten one is empty, and its id may have been handed out again.
  const pgids = all.filter((pgid) => groups.has(pgid));
  for (const pgid of pgids) signalGroup(pgid, groups.get(pgid)!.stopSignal);
  const deadline = Date.now() + graceMs;
  let living = livingGroups(pgids);
  while (living.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    living = livingGroups(living);
  }
  for (const pgid of living) signalGroup(pgid, 'SIGKILL');
  while (living.length > 0 && Date.now() < deadline + 2000) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    living = livingGroups(living);
  }
  for (const pgid of pgids) forget(pgid);
}

/** stopAllChildren for a process that is going away: synchronous (no event loop is left to wait on). */
export function stopAllChildrenNow(graceMs = GRACE_MS): void {
  const pgids = [...groups.keys()];
  for (const pgid of pgids) signalGroup(pgid, groups.get(pgid)!.stopSignal);
  const deadline = Date.now() + graceMs;
  let living = livingGroups(pgids);
  while (living.length > 0 && Date.now() < deadline) {
    sleepNow(25);
    living = livingGroups(living);
  }
  for (const pgid of living) signalGroup(pgid, 'SIGKILL');
  for (const pgid of pgids) forget(pgid);
}

/** The registered process group ids (for tests of this module). */
export const registeredGroups = (): number[] => [...groups.keys()];

function register(pgid: number, stopSignal: NodeJS.Signals): void {
  if (groups.size === 0) {
    process.on('exit', onExit);
    for (const signal of SIGNALS) process.on(signal, onSignal);
  }
  groups.set(pgid, { stopSignal, leaderGone: false });
}

function forget(pgid: number): void {
  if (!groups.delete(pgid) || groups.size > 0) return;
  process.off('exit', onExit);
  for (const signal of SIGNALS) process.off(signal, onSignal);
}

function onExit(): void {
  stopAllChildrenNow();
}

/** Stops the groups, then raises the signal again without this handler: the process ends as it would have. */
function onSignal(signal: NodeJS.Signals): void {
  stopAllChildrenNow();
  process.off('exit', onExit);
  for (const s of SIGNALS) process.off(s, onSignal);
  process.kill(process.pid, signal);
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  if (reused(pgid)) return;
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is gone already
  }
}

/**
 * Those of `pgids` that still have a running member. A member that has exited but is not reaped yet
 * (a zombie: the leader, while this process has no event loop to reap it, as in an exit handler)
 * does not count; Linux's /proc tells them apart, elsewhere any member counts.
 */
function livingGroups(pgids: number[]): number[] {
  const existing = pgids.filter((pgid) => {
    if (reused(pgid)) return false;
    try {
      process.kill(-pgid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  });
  if (existing.length === 0) return [];
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return existing;
  }
  const running = new Set<number>();
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, the last ')' ends it.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (state !== 'Z' && state !== 'X') running.add(Number(pgrp));
  }
  return existing.filter((pgid) => running.has(pgid));
}

/** Whether another process has the pid of the group's exited leader (Linux; elsewhere never known). */
function reused(pgid: number): boolean {
  return groups.get(pgid)?.leaderGone === true && existsSync(`/proc/${pgid}`);
}

function sleepNow(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
