// Files the consumer tools replace as a whole (walk's output, sync's copy and state): written
// beside their destination under a temporary name, then put in place atomically and durably (fsync
// the file, rename it over the old one, fsync the directory), so a reader or a crash never sees half
// a file. Also what such a tool checks before its work: that it can create files there, and a lock.
import { readFileSync, rmSync } from 'node:fs';
import { link, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ConsumerError } from './consumer-tools.ts';

/** A temporary path beside `path` (same directory, so the rename stays atomic), unique to this process. */
export const tempPathBeside = (path: string, purpose = 'tmp'): string =>
  join(dirname(path), `.${basename(path)}.${process.pid}.${purpose}`);

/**
 * Removes the temporary files beside `path` (tempPathBeside) of processes that no longer run: a
 * command killed (SIGKILL, a power loss) in the middle of writing leaves its temporary file behind,
 * and the next run clears it. A process still running keeps its own. Returns the names removed.
 */
export async function removeLeftoverTemps(path: string): Promise<string[]> {
  const prefix = `.${basename(path)}.`;
  const removed: string[] = [];
  for (const name of await readdir(dirname(path)).catch(() => [])) {
    const pid = /^(\d+)\.[a-z]+$/.exec(name.slice(prefix.length))?.[1];
    if (!name.startsWith(prefix) || pid === undefined || isRunning(Number(pid))) continue;
    await rm(join(dirname(path), name), { force: true });
    removed.push(name);
  }
  return removed;
}

const CANNOT_CREATE: Partial<Record<string, string>> = {
  ENOENT: 'missing directory',
  ENOTDIR: 'not a directory',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'read-only file system',
};

/**
 * Why no file can be created beside `path`, found by creating and removing a temporary file there
 * as a save does (so it also sees what a look at the permission bits misses: root, a read-only
 * mount); null when one can. A command checks it before its work, not minutes later at its save.
 */
async function whyNoFileBeside(path: string): Promise<string | null> {
  const probe = tempPathBeside(path, 'probe');
  try {
    await (await open(probe, 'w')).close();
  } catch (error) {
    return CANNOT_CREATE[(error as NodeJS.ErrnoException).code ?? ''] ?? (error as Error).message;
  }
  await rm(probe, { force: true });
  return null;
}

/**
 * Throws a ConsumerError (exit 2) naming `option` when `path` is there but is not a file (a device, a
 * pipe, a socket), or when no file can be created beside it (whyNoFileBeside). A save renames its
 * file over `path`: `walk --out /dev/null`, run as root, replaced the system's /dev/null with a
 * regular file (everything that wrote to it afterwards as another user failed, initdb among them).
 */
export async function requireFileBeside(option: string, path: string): Promise<void> {
  const found = await stat(path).catch(() => null);
  if (found && !found.isFile() && !found.isDirectory())
    throw new ConsumerError(
      `${option} ${path}: not a regular file (a device, a pipe or a socket); give a file's path`,
      2,
    );
  const why = await whyNoFileBeside(path);
  if (why) throw new ConsumerError(`${option} ${path}: cannot create a file in ${dirname(path)} (${why})`, 2);
}

/** The lock beside a file is held by another process: `pid`, or null when the lock holds no pid. */
export class HeldLock extends Error {
  readonly lockPath: string;
  readonly pid: number | null;
  constructor(lockPath: string, pid: number | null) {
    super(`${lockPath} is held by ${pid === null ? 'another process' : `process ${pid}`}`);
    this.lockPath = lockPath;
    this.pid = pid;
  }
}

/**
 * Takes the lock file beside `path` (`.name.lock`, created with O_EXCL, holding this process's pid)
 * or throws HeldLock: a second command on the same file refuses at once rather than interleave its
 * saves with the first one's. A lock whose process no longer runs (killed, a power loss) is taken
 * over, as removeLeftoverTemps judges temporary files; so is one holding this process's own pid,
 * left by an earlier process that had it (a container's). Returns the release, which also runs
 * when the process exits without calling it (process.exit, a second Ctrl-C).
 */
export async function lockBeside(path: string): Promise<() => void> {
  const lockPath = join(dirname(path), `.${basename(path)}.lock`);
  const content = `${process.pid}\n`;
  while (!(await createExclusively(lockPath, content))) {
    const holder = await pidIn(lockPath);
    if (holder === 'gone') continue; // released meanwhile: try again
    if (holder === null || (holder !== process.pid && isRunning(holder))) throw new HeldLock(lockPath, holder);
    await removeStale(lockPath, holder);
  }
  const release = (): void => {
    try {
      // Only this process's own lock: never one that another took after this one was removed by hand.
      if (readFileSync(lockPath, 'utf8') === content) rmSync(lockPath);
    } catch {
      // Already gone (or unreadable: the next command judges it by its pid).
    }
  };
  process.once('exit', release);
  return () => {
    process.off('exit', release);
    release();
  };
}

/**
 * Removes the lock at `lockPath` if it still holds `pid` (a process that no longer runs), inside a
 * takeover lock of its own (`.lock.takeover`, O_EXCL): of several processes that found it stale at
 * once, each removed it, one of them the lock another had just taken in its place, and two syncs
 * held it (found from outside: 2 of 6 started together). A takeover lock left by a process that died
 * inside it is removed (removeDeadTakeover); while a live process holds it, the others wait a moment.
 */
async function removeStale(lockPath: string, pid: number): Promise<void> {
  const takeover = `${lockPath}.takeover`;
  if (!(await createExclusively(takeover, `${process.pid}\n`))) {
    if (!(await removeDeadTakeover(takeover))) await new Promise((resolve) => setTimeout(resolve, 20));
    return;
  }
  try {
    if ((await pidIn(lockPath)) === pid) await rm(lockPath, { force: true });
  } finally {
    await rm(takeover, { force: true });
  }
}

/** A takeover lock is held for a few milliseconds: one holding no pid this much older was left by a process killed while creating it. */
const TAKEOVER_UNWRITTEN_MS = 5_000;

/**
 * Removes the takeover lock `takeover` if the process that took it died inside it: it holds the pid
 * of a process that no longer runs or this process's own (a container's earlier process: this one
 * holds none while it asks), or no pid and is older than TAKEOVER_UNWRITTEN_MS (killed between
 * creating it and writing its pid; every later run used to wait on it for ever). Moved aside first,
 * which of several processes judging it at once only one can do, and removed only if what was moved
 * is the file judged (the same inode and modification time): a live process's takeover created in
 * its place meanwhile is put back. False when it is alive (the caller waits a moment).
 */
async function removeDeadTakeover(takeover: string): Promise<boolean> {
  const judged = await stat(takeover, { bigint: true }).catch(ifGone(null));
  const taker = judged && (await pidIn(takeover));
  if (!judged || taker === 'gone') return true;
  const dead =
    taker === null
      ? Date.now() - Number(judged.mtimeMs) > TAKEOVER_UNWRITTEN_MS
      : taker === process.pid || !isRunning(taker);
  if (!dead) return false;
  const aside = tempPathBeside(takeover, 'dead');
  if ((await rename(takeover, aside).catch(ifGone('gone'))) === 'gone') return true;
  const moved = await stat(aside, { bigint: true });
  if (moved.ino !== judged.ino || moved.mtimeNs !== judged.mtimeNs) await link(aside, takeover).catch(() => {});
  await rm(aside, { force: true });
  return true;
}

/** For a promise's catch: `value` when the file was not there, else the error again. */
const ifGone =
  <T>(value: T) =>
  (error: NodeJS.ErrnoException): T => {
    if (error.code === 'ENOENT') return value;
    throw error;
  };

/** Creates `path` with `content`; false if it exists. */
async function createExclusively(path: string, content: string): Promise<boolean> {
  let file;
  try {
    file = await open(path, 'wx');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    await file.write(content);
  } finally {
    await file.close();
  }
  return true;
}

/** The pid in a lock file; null if it holds none (being written, or damaged); 'gone' if it no longer exists. */
async function pidIn(lockPath: string): Promise<number | null | 'gone'> {
  let text: string;
  try {
    text = await readFile(lockPath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw error;
  }
  return /^[1-9]\d{0,9}\n$/.test(text) ? Number(text) : null;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0); // signal 0: only asks whether the process exists
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // exists, but another user's
  }
}

/** Puts the finished file `temp` at `path`: its bytes on disk first, then the rename, then the rename on disk. */
export async function renameDurably(temp: string, path: string): Promise<void> {
  await fsyncPath(temp);
  await rename(temp, path);
  await fsyncPath(dirname(path)); // the rename itself survives a power loss
}

async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
