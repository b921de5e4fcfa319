// The files of `sync`: the JSON-lines copy (one record per line) and the state (the feed cursor),
// each replaced atomically and durably (durable-files.ts). The copy is written before the state, so
// after a crash the state is never ahead of the copy (re-applying events is harmless).
import { createReadStream, existsSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { SyncState } from '../../packages/client/src/sync.ts';
import { renameDurably, tempPathBeside } from './durable-files.ts';

const ID_PREFIX = '{"id":"';

/** The id of a line written by writeCopy (records are serialised with `id` first). */
function idOf(line: string): string {
  if (line.startsWith(ID_PREFIX) && line[ID_PREFIX.length + 36] === '"') return line.slice(ID_PREFIX.length, ID_PREFIX.length + 36);
  return (JSON.parse(line) as { id: string }).id;
}

/** The copy as id -> line, in file order; null when the file does not exist. */
export async function readCopy(path: string): Promise<Map<string, string> | null> {
  if (!existsSync(path)) return null;
  const lines = new Map<string, string>();
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

/** Replaces `path` with `chunks` (written in order) atomically and durably. */
export async function replaceDurably(path: string, chunks: Iterable<string>): Promise<void> {
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

/** The copy's lines in chunks of about a thousand (no single huge string for a large catalog). */
export function* copyChunks(lines: Map<string, string>): Iterable<string> {
  let chunk: string[] = [];
  for (const line of lines.values()) {
    chunk.push(line);
    if (chunk.length === 1000) {
      yield `${chunk.join('\n')}\n`;
      chunk = [];
    }
  }
  if (chunk.length) yield `${chunk.join('\n')}\n`;
}
