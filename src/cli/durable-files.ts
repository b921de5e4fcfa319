// Files the CLI replaces as a whole (walk's output, sync's copy and state): written beside their
// destination under a temporary name, then put in place atomically and durably (fsync the file,
// rename it over the old one, fsync the directory), so a reader or a crash never sees half a file.
import { open, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** A temporary path beside `path` (same directory, so the rename stays atomic), unique to this process. */
export const tempPathBeside = (path: string, purpose = 'tmp'): string => join(dirname(path), `.${basename(path)}.${process.pid}.${purpose}`);

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
