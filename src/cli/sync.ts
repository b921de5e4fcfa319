// sync --base-url URL --state FILE --out FILE.jsonl [--view FILTER] [--limit N] [--save-every N] [--save-interval S] [--json]
// Keeps a JSON-lines copy of the public catalog (or of a view) current through the change feed: the
// first run walks the whole list, later runs apply only what changed. The sync itself is the
// consumer room's (consumer/sync.ts: HTTP only, no database); this file registers the command,
// checks its arguments and prints what the sync returns.
import type { Command } from 'commander';
import type { Config } from '../kernel/config.ts';
import { syncToFile } from '../consumer/sync.ts';
import { callerPath, positiveInt } from './arguments.ts';
import { CliError, endProgress, output, progress } from './run.ts';
import { addConsumerOptions, parseConsumerArguments } from './walk.ts';

type SyncOpts = {
  baseUrl?: string;
  key?: string;
  state?: string;
  out?: string;
  limit: string;
  view?: string;
  saveEvery: string;
  saveInterval: string;
  json?: boolean;
};

export function registerSyncCommand(program: Command, config: Config): void {
  addConsumerOptions(program.command('sync'), config)
    .description(
      'keep a JSON-lines copy of the catalog current through the change feed (first run: a full walk; then only the changes, deletions included)',
    )
    .option('--state <file>', 'where the feed cursor is kept between runs (created on the first run)')
    .option('--out <file>', 'the JSON-lines copy to keep current')
    .option('--limit <n>', 'events per feed page, 1..1000', '1000')
    .option(
      '--view <filter>',
      'keep a copy of this view only: a list filter such as "format=IN_PERSON&country=DE" (format, language, topic, provider, country, city); the state then belongs to that view',
    )
    // A save rewrites the whole copy: often enough that a crash costs little to fetch again, rarely
    // enough that a long feed does not turn into rewriting the catalog over and over.
    .option('--save-every <n>', 'save the copy and the cursor after this many changes', '10000')
    .option('--save-interval <seconds>', 'or when a page arrives this many seconds after the last save', '5')
    .option(
      '--json',
      'print JSON only: { mode, restarted, walked, events, upserts, removals, records, saves, out, state }',
    )
    .action(async (opts: SyncOpts) => {
      const { baseUrl, key, out } = parseConsumerArguments(opts);
      if (!opts.state) throw new CliError('--state is required: the file that keeps the feed cursor between runs', 2);
      const limit = positiveInt('--limit', opts.limit, 1000);
      const policy = {
        everyChanges: positiveInt('--save-every', opts.saveEvery),
        intervalMs: 1000 * positiveInt('--save-interval', opts.saveInterval),
      };
      const { summary, text } = await syncToFile(
        { baseUrl, key, out, state: callerPath(opts.state), limit, policy, view: opts.view },
        { line: progress, end: endProgress },
      );
      output(opts.json, summary, () => text);
    });
}
