// Files the CLI replaces as a whole (walk's output, sync's copy and state): written beside their
// destination under a temporary name, then put in place atomically and durably (fsync the file,
// rename it over the old one, fsync the directory), so a reader or a crash never sees half a file.
import { open, rename } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** A temporary path beside `path` (same directory, so the rename stays atomic), unique to this process. */
export const tempPathBeside = (path: string, purpose = 'tmp'): string => join(dirname(path), `.${basename(path)}.${process.pid}.${purpose}`);

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
