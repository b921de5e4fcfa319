// walk --base-url URL --key KEY --out FILE.jsonl [--limit N] [--json]
// The consumer's nightly full walk over /v1, as an operator tool: every record once, as JSON lines.
// The walk itself is the consumer room's (consumer/walk.ts: HTTP only, no database); this file
// registers the command, checks its arguments and prints what the walk returns.
import { type Command, Option } from 'commander';
import type { Config } from '../kernel/config.ts';
import { type WalkArguments, walkToFile } from '../consumer/walk.ts';
import { callerPath, positiveInt } from './arguments.ts';
import { CliError, endProgress, output, progress } from './run.ts';

export type WalkOpts = { baseUrl?: string; key?: string; out?: string; limit: string; json?: boolean };

export function registerWalkCommand(program: Command, config: Config): void {
  addConsumerOptions(program.command('walk'), config)
    .description(
      'read the whole catalog over /v1, as a consumer does nightly, into a JSON-lines file (each record once)',
    )
    .option('--out <file>', 'the JSON-lines file to write (replaced only when the walk succeeds)')
    .option('--limit <n>', 'page size, 1..100', '100')
    .option('--json', 'print JSON only: { count, highestUpdatedAt, pages, out, received, duplicates }')
    .action(async (opts: WalkOpts) => {
      const { summary, text } = await walkToFile(parseWalkArguments(opts), { line: progress, end: endProgress });
      output(opts.json, summary, () => text);
    });
}

/** --base-url and --key, shared by walk and sync (defaults from LODS_BASE_URL and LODS_API_KEY). */
export function addConsumerOptions(command: Command, config: Config): Command {
  return (
    command
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
  );
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
  return { baseUrl: url.href, key: opts.key, out: callerPath(opts.out) };
}

/** Exported for the tests: every bad argument is a CliError with exit code 2. */
export function parseWalkArguments(opts: WalkOpts): WalkArguments {
  return { ...parseConsumerArguments(opts), limit: positiveInt('--limit', opts.limit, 100) };
}
