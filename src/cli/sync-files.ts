// The files of `sync`: the JSON-lines copy (one record per line) and the state (the feed cursor),
// each replaced atomically and durably (durable-files.ts). The copy is written before the state, so
// after a crash the state is never ahead of the copy (re-applying events is harmless).
import { createReadStream, existsSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { SyncState } from '../../packages/client/src/sync.ts';
import type { LearningOpportunity } from '../../packages/client/src/types.ts';
import { renameDurably, tempPathBeside } from './durable-files.ts';

/**
 * A record of the copy: its JSON line, or the record as the walk or the feed parsed it, until it is
 * first written (copyChunks). Keeping the walk's records as they came, rather than serialising them
 * beside the parsed ones, is what keeps a first run at one copy of the catalog in memory.
 */
export type CopyRecord = string | LearningOpportunity;

const ID_PREFIX = '{"id":"';

/** The id of a line of the copy (records are serialised with `id` first). */
function idOf(line: string): string {
  if (line.startsWith(ID_PREFIX) && line[ID_PREFIX.length + 36] === '"') return line.slice(ID_PREFIX.length, ID_PREFIX.length + 36);
  return (JSON.parse(line) as { id: string }).id;
}

/** The copy as id -> line, in file order; null when the file does not exist. */
export async function readCopy(path: string): Promise<Map<string, CopyRecord> | null> {
  if (!existsSync(path)) return null;
  const lines = new Map<string, CopyRecord>();
  for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) if (line) lines.set(idOf(line), line);
  return lines;
}

export async function readState(path: string): Promise<SyncState | null> {
  if (!existsSync(path)) return null;
  const file = await open(path, 'r');
  try {
    const state = JSON.parse(await file.readFile('utf8')) as Partial<SyncState>;
    return typeof state.cursor === 'string' && state.cursor ? { cursor: state.cursor } : null;
  } finally {
    await file.close();
  }
}

/** Writes the copy, then the cursor that goes with it: each file whole or not at all, the state never ahead. */
export async function saveCopyAndState(files: { out: string; state: string }, records: Map<string, CopyRecord>, cursor: string): Promise<void> {
  await replaceDurably(files.out, copyChunks(records));
  await replaceDurably(files.state, [`${JSON.stringify({ cursor, records: records.size, savedAt: new Date().toISOString() })}\n`]);
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
      const line = JSON.stringify(record);
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
