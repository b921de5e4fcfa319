// walk --base-url URL --key KEY --out FILE.jsonl [--limit N] [--json]
// The consumer's nightly full walk over /v1 (docs/contract.md, "REST v1"), as an operator tool: every record once,
// as JSON lines. It talks HTTP only (no database), so it runs from anywhere a consumer would.
//
// Pages are streamed to a partial file as they arrive (memory stays at the id index, not the
// catalog); if the walk saw duplicates, the partial file is then copied keeping only the winning
// line of each id. The output file is replaced (durable-files.ts) only when everything succeeded.
import { createReadStream, createWriteStream } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { type Command, Option } from 'commander';
import type { Config } from '../kernel/config.ts';
import { createCatalogClient, CatalogHttpError, CatalogNetworkError, walk, type WalkResult } from '@lods/client';
import { removeLeftoverTemps, renameDurably, requireFileBeside, tempPathBeside } from './durable-files.ts';
import { positiveInt } from './arguments.ts';
import { CliError, output, progress } from './run.ts';

export type WalkOpts = { baseUrl?: string; key?: string; out?: string; limit: string; json?: boolean };

export function registerWalkCommand(program: Command, config: Config): void {
  program
    .command('walk')
    .description(
      'read the whole catalog over /v1, as a consumer does nightly, into a JSON-lines file (each record once)',
    )
    .addOption(
      new Option('--base-url <url>', 'base address of the service, without /v1 (or LODS_BASE_URL)').default(
        config.walk.baseUrl,
      ),
    )
    // The description stands in for the value in --help: the key itself is never printed.
    .addOption(
      new Option(
        '--key <key>',
        'API key with catalog:read (or LODS_API_KEY: prefer it, it keeps the key out of shell history)',
      ).default(config.walk.apiKey, 'from LODS_API_KEY'),
    )
    .option('--out <file>', 'the JSON-lines file to write (replaced only when the walk succeeds)')
    .option('--limit <n>', 'page size, 1..100', '100')
    .option('--json', 'print JSON only: { count, highestUpdatedAt, pages, out, received, duplicates }')
    .action(async (opts: WalkOpts) => {
      const { baseUrl, key, out, limit } = parseWalkArguments(opts);
      const client = createCatalogClient({
        baseUrl,
        apiKey: key,
        onRetry: ({ attempt, error, delayMs }) =>
          progress(`walk: attempt ${attempt} failed (${error.message}); retrying in ${(delayMs / 1000).toFixed(1)} s`),
      });
      const started = Date.now();
      let result: WalkResult;
      try {
        result = await walkToFile(out, (onPage) =>
          walk({
            client,
            limit,
            keepRecords: false,
            onPage,
            onProgress: (p) =>
              progress(
                `walk: ${p.pages} pages, ${p.received} records received (${p.unique} distinct) of ${p.totalCount}`,
              ),
          }),
        );
      } catch (error) {
        throw describeWalkFailure(error);
      } finally {
        if (process.stderr.isTTY) process.stderr.write('\n');
      }
      const summary = {
        count: result.count,
        highestUpdatedAt: result.highestUpdatedAt,
        pages: result.pages,
        out,
        received: result.received,
        duplicates: result.duplicates,
      };
      output(opts.json, summary, () =>
        [
          `Wrote ${summary.count} records to ${out} in ${((Date.now() - started) / 1000).toFixed(1)} s (${summary.pages} pages, ${summary.duplicates} duplicate copies dropped).`,
          `Highest updatedAt: ${summary.highestUpdatedAt ?? '(none: the catalog is empty)'}`,
        ].join('\n'),
      );
    });
}

/** Where a consumer command (walk, sync) reads and writes; every bad argument is a CliError with exit code 2. */
export function parseConsumerArguments(opts: { baseUrl?: string; key?: string; out?: string }): {
  baseUrl: string;
  key: string;
  out: string;
} {
  if (!opts.baseUrl)
    throw new CliError('--base-url is required (or set LODS_BASE_URL), e.g. --base-url https://lods.example.org', 2);
  let url: URL;
  try {
    url = new URL(opts.baseUrl);
  } catch {
    throw new CliError(`--base-url is not a URL: "${opts.baseUrl}"`, 2);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new CliError(`--base-url must be an http or https URL, got "${opts.baseUrl}"`, 2);
  if (!opts.key)
    throw new CliError(
      'an API key is required: set LODS_API_KEY (preferred, stays out of shell history) or pass --key',
      2,
    );
  if (!opts.out) throw new CliError('--out is required: the JSON-lines file to write', 2);
  return { baseUrl: url.href, key: opts.key, out: resolve(opts.out) };
}

/** Exported for the tests: every bad argument is a CliError with exit code 2. */
export function parseWalkArguments(opts: WalkOpts): { baseUrl: string; key: string; out: string; limit: number } {
  return { ...parseConsumerArguments(opts), limit: positiveInt('--limit', opts.limit, 100) };
}

type OnPage = (records: readonly unknown[]) => Promise<void>;

/** Runs the walk with a page writer on a partial file, then puts exactly one line per id at `out`. */
async function walkToFile(out: string, run: (onPage: OnPage) => Promise<WalkResult>): Promise<WalkResult> {
  await requireFileBeside('--out', out);
  await removeLeftoverTemps(out);
  const partial = tempPathBeside(out, 'partial');
  const deduped = tempPathBeside(out, 'dedup');
  const file = await open(partial, 'w');
  try {
    const result = await run(async (records) => {
      if (records.length) await file.write(records.map((r) => `${JSON.stringify(r)}\n`).join(''));
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
  const lines = createInterface({ input: createReadStream(from), crlfDelay: Infinity });
  await pipeline(async function* () {
    let n = 0;
    for await (const line of lines) if (keep.has(n++)) yield `${line}\n`;
  }, createWriteStream(to));
}

export function describeWalkFailure(error: unknown): unknown {
  if (error instanceof CatalogHttpError) {
    const hint =
      error.status === 401
        ? ' (check the key: unknown or revoked?)'
        : error.status === 403
          ? ' (the key needs the catalog:read scope)'
          : '';
    const detail = error.problem?.detail ?? error.problem?.title ?? 'no problem details';
    return new CliError(`the service answered ${error.status} after ${error.attempts} attempt(s): ${detail}${hint}`, 1);
  }
  if (error instanceof CatalogNetworkError)
    return new CliError(`${error.message} (gave up after ${error.attempts} attempts)`, 1);
  return error;
}
