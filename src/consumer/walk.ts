// The consumer's nightly full walk over /v1 (docs/contract.md, "REST v1") into a file: every record
// once, as JSON lines (`npm run cli -- walk`, registered in cli/walk.ts). HTTP only, no database.
//
// Pages are streamed to a partial file as they arrive (memory stays at the id index, not the
// catalog); if the walk saw duplicates, the partial file is then copied keeping only the winning
// line of each id. The output file is replaced (durable-files.ts) only when everything succeeded.
import { createReadStream, createWriteStream } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { createCatalogClient, CatalogHttpError, CatalogNetworkError, walk, type WalkResult } from '@lods/client';
import { ConsumerError, type Progress, type ToolReport } from './consumer-tools.ts';
import { jsonLine, readLines } from './json-lines.ts';
import { removeLeftoverTemps, renameDurably, requireFileBeside, tempPathBeside } from './durable-files.ts';

/** What a walk needs, checked (cli/walk.ts parses them): `out` is an absolute path, `limit` the page size. */
export type WalkArguments = { baseUrl: string; key: string; out: string; limit: number };

export type WalkSummary = {
  count: number;
  highestUpdatedAt: string | null;
  pages: number;
  out: string;
  received: number;
  duplicates: number;
};

/** Walks the whole catalog into `out` (replaced only when the walk succeeds), reporting on `progress`. */
export async function walkToFile(
  { baseUrl, key, out, limit }: WalkArguments,
  progress: Progress,
): Promise<ToolReport<WalkSummary>> {
  const client = createCatalogClient({
    baseUrl,
    apiKey: key,
    onRetry: ({ attempt, error, delayMs }) =>
      progress.line(`walk: attempt ${attempt} failed (${error.message}); retrying in ${(delayMs / 1000).toFixed(1)} s`),
  });
  const started = Date.now();
  let result: WalkResult;
  try {
    result = await writeWalk(out, (onPage) =>
      walk({
        client,
        limit,
        keepRecords: false,
        onPage,
        onProgress: (p) =>
          progress.line(
            `walk: ${p.pages} pages, ${p.received} records received (${p.unique} distinct) of ${p.totalCount}`,
          ),
      }),
    );
  } catch (error) {
    throw describeWalkFailure(error);
  } finally {
    progress.end();
  }
  const summary = {
    count: result.count,
    highestUpdatedAt: result.highestUpdatedAt,
    pages: result.pages,
    out,
    received: result.received,
    duplicates: result.duplicates,
  };
  const text = [
    `Wrote ${summary.count} records to ${out} in ${((Date.now() - started) / 1000).toFixed(1)} s (${summary.pages} pages, ${summary.duplicates} duplicate copies dropped).`,
    `Highest updatedAt: ${summary.highestUpdatedAt ?? '(none: the catalog is empty)'}`,
  ].join('\n');
  return { summary, text };
}

type OnPage = (records: readonly unknown[]) => Promise<void>;

/** Runs the walk with a page writer on a partial file, then puts exactly one line per id at `out`. */
async function writeWalk(out: string, run: (onPage: OnPage) => Promise<WalkResult>): Promise<WalkResult> {
  await requireFileBeside('--out', out);
  await removeLeftoverTemps(out);
  const partial = tempPathBeside(out, 'partial');
  const deduped = tempPathBeside(out, 'dedup');
  const file = await open(partial, 'w');
  try {
    const result = await run(async (records) => {
      if (records.length) await file.write(records.map((r) => `${jsonLine(r)}\n`).join(''));
    });
    await file.close();
    if (result.duplicates === 0) {
      await renameDurably(partial, out);
    } else {
      await keepLines(partial, deduped, new Set(Array.from(result.index.values(), (e) => e.seq)));
      await renameDurably(deduped, out);
    }
    return result;
  } finally {
    await file.close().catch(() => {});
    await rm(partial, { force: true });
    await rm(deduped, { force: true });
  }
}

/** Copies the lines whose (0-based) numbers are in `keep`: line n of the partial file is sequence number n. */
async function keepLines(from: string, to: string, keep: Set<number>): Promise<void> {
  await pipeline(async function* () {
    let n = 0;
    for await (const line of readLines(createReadStream(from))) if (keep.has(n++)) yield `${line}\n`;
  }, createWriteStream(to));
}

/** The client's HTTP and network failures as a ConsumerError (exit 1) saying what to check; anything else as it is. */
export function describeWalkFailure(error: unknown): unknown {
  if (error instanceof CatalogHttpError) {
    const hint =
      error.status === 401
        ? ' (check the key: unknown or revoked?)'
        : error.status === 403
          ? ' (the key needs the catalog:read scope)'
          : '';
    const detail = error.problem?.detail ?? error.problem?.title ?? 'no problem details';
    return new ConsumerError(
      `the service answered ${error.status} after ${error.attempts} attempt(s): ${detail}${hint}`,
      1,
    );
  }
  if (error instanceof CatalogNetworkError)
    return new ConsumerError(`${error.message} (gave up after ${error.attempts} attempts)`, 1);
  return error;
}
