// The files of `sync`: the JSON-lines copy (one record per line) and the state (the feed cursor),
// each replaced atomically and durably (durable-files.ts). The copy is written before the state, so
// after a crash the state is never ahead of the copy (re-applying events is harmless). Both are
// checked before the first request (checkSyncFiles, then reading them): a run that could only fail
// at its first save, or would start over from a file it cannot read, refuses at once (exit 2).
import { type FileHandle, open, realpath, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { SyncState, LearningOpportunity } from '@lods/client';
import { renameDurably, requireFileBeside, tempPathBeside } from './durable-files.ts';
import { ConsumerError } from './consumer-tools.ts';
import { escapeSeparators, jsonLine, readLines } from './json-lines.ts';

/**
 * A record of the copy: its JSON line, or the record as the walk or the feed parsed it, until it is
 * first written (copyChunks). Keeping the walk's records as they came, rather than serialising them
 * beside the parsed ones, is what keeps a first run at one copy of the catalog in memory.
 */
export type CopyRecord = string | LearningOpportunity;

const ID_PREFIX = '{"id":"';

/** The id of a line of the copy (records are serialised with `id` first); null for a line that is no record. */
function idOf(line: string): string | null {
  if (line.startsWith(ID_PREFIX) && line[ID_PREFIX.length + 36] === '"')
    return line.slice(ID_PREFIX.length, ID_PREFIX.length + 36);
  try {
    const id = (JSON.parse(line) as { id?: unknown } | null)?.id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

/**
 * Refuses what a run could only damage or fail on, before its first request (a first run walks the
 * whole catalog first): one file for both (each save would write the cursor over the copy), or a
 * directory where a save cannot create its temporary file.
 */
export async function checkSyncFiles(files: { out: string; state: string }): Promise<void> {
  if (await isSameFile(files.out, files.state)) {
    const paths = files.out === files.state ? files.out : `${files.state} and ${files.out}`;
    throw new ConsumerError(
      `--state and --out are the same file (${paths}): each save would write the cursor over the copy; give two different files`,
      2,
    );
  }
  await requireFileBeside('--out', files.out);
  await requireFileBeside('--state', files.state);
}

/** Same inode when both exist (symlinks, hard links); otherwise the same path once its directory's symlinks are resolved. */
async function isSameFile(a: string, b: string): Promise<boolean> {
  const [statA, statB] = await Promise.all([stat(a).catch(() => null), stat(b).catch(() => null)]);
  if (statA && statB) return statA.dev === statB.dev && statA.ino === statB.ino;
  const real = async (path: string) => join(await realpath(dirname(path)).catch(() => dirname(path)), basename(path));
  return (await real(a)) === (await real(b));
}

/** `path` open for reading; null when it does not exist; a ConsumerError (exit 2) naming `option` when it cannot be read. */
async function openExisting(option: string, path: string): Promise<FileHandle | null> {
  let file: FileHandle;
  try {
    file = await open(path, 'r');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    throw new ConsumerError(
      `${option} ${path}: cannot read it (${code === 'EACCES' ? 'permission denied' : (error as Error).message})`,
      2,
    );
  }
  if ((await file.stat()).isDirectory()) {
    await file.close();
    throw new ConsumerError(`${option} ${path}: is a directory, not a file`, 2);
  }
  return file;
}

/** The copy as id -> line, in file order; null when the file does not exist. */
export async function readCopy(path: string): Promise<Map<string, CopyRecord> | null> {
  const file = await openExisting('--out', path);
  if (!file) return null;
  const lines = new Map<string, CopyRecord>();
  let number = 0;
  try {
    for await (const line of readLines(file.createReadStream())) {
      number++;
      if (!line) continue;
      const id = idOf(line);
      if (id === null)
        throw new ConsumerError(
          `--out ${path}: line ${number} is not a JSON record with an "id" (not a copy that sync wrote?)`,
          2,
        );
      lines.set(id, escapeSeparators(line)); // a copy written before they were escaped
    }
  } finally {
    await file.close();
  }
  return lines;
}

/** The stored cursor; null when the file does not exist. A file of another shape is refused, not taken for a first run. */
export async function readState(path: string): Promise<SyncState | null> {
  const file = await openExisting('--state', path);
  if (!file) return null;
  let text: string;
  try {
    text = await file.readFile('utf8');
  } finally {
    await file.close();
  }
  let state: unknown;
  try {
    state = JSON.parse(text);
  } catch (error) {
    throw new ConsumerError(
      `--state ${path}: not JSON (${(error as Error).message.replace(/\s+/g, ' ')}); remove it to start over with a full walk`,
      2,
    );
  }
  const cursor = (state as { cursor?: unknown } | null)?.cursor;
  if (typeof cursor !== 'string' || !cursor)
    throw new ConsumerError(
      `--state ${path}: not a sync state (no "cursor" string); remove it to start over with a full walk`,
      2,
    );
  return { cursor };
}

/** Writes the copy, then the cursor that goes with it: each file whole or not at all, the state never ahead. */
export async function saveCopyAndState(
  files: { out: string; state: string },
  records: Map<string, CopyRecord>,
  cursor: string,
): Promise<void> {
  await replaceDurably(files.out, copyChunks(records));
  await saveState(files, records, cursor);
}

/** Writes the cursor alone, whole or not at all: for a copy on disk that has not changed since it was written. */
export async function saveState(
  files: { state: string },
  records: Map<string, CopyRecord>,
  cursor: string,
): Promise<void> {
  await replaceDurably(files.state, [
    `${JSON.stringify({ cursor, records: records.size, savedAt: new Date().toISOString() })}\n`,
  ]);
}

/** Replaces `path` with `chunks` (written in order) atomically and durably. */
async function replaceDurably(path: string, chunks: Iterable<string>): Promise<void> {
  const temp = tempPathBeside(path);
  const file = await open(temp, 'w');
  try {
    for (const chunk of chunks) await file.write(chunk);
  } catch (error) {
    await file.close().catch(() => {});
    await rm(temp, { force: true });
    throw error;
  }
  await file.close();
  await renameDurably(temp, path);
}

/**
 * The copy's lines in chunks of about a thousand (no single huge string for a large catalog). A
 * record still held parsed is serialised here, once: its line takes its place in `records`, so the
 * parsed record can be freed and is not serialised again at the next save.
 */
function* copyChunks(records: Map<string, CopyRecord>): Iterable<string> {
  let chunk: string[] = [];
  for (const [id, record] of records) {
    if (typeof record === 'string') chunk.push(record);
    else {
      const line = jsonLine(record);
      records.set(id, line); // an existing key: the iteration neither revisits nor reorders it
      chunk.push(line);
    }
    if (chunk.length === 1000) {
      yield `${chunk.join('\n')}\n`;
      chunk = [];
    }
  }
  if (chunk.length) yield `${chunk.join('\n')}\n`;
}
