// sync --base-url URL --state FILE --out FILE.jsonl [--view FILTER] [--limit N] [--save-every N] [--save-interval S] [--json]
// Keeps a JSON-lines copy of the public catalog (or, with --view, of a view: `format=ONLINE&country=DE`,
// the list's syntax restricted to format, language, topic, provider, country and city) current
// through the change feed (client/sync.ts):
// the first run (or one whose cursor expired) walks the whole list, later runs apply only what
// changed, deletions included. The copy lives in memory during the run and is saved with its cursor
// now and then (sync-copy.ts), at the end, on a failure and on Ctrl-C or SIGTERM, so an interrupted
// run resumes from the last save. HTTP only, no database. Before its first request it refuses (exit 2)
// files it could only fail on or damage (sync-files.ts), and locks the state so that two runs on it
// never interleave their saves.
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { createCatalogClient, sync, type SyncOptions, type SyncResult } from '@lods/client';
import type { Config } from '../kernel/config.ts';
import { exitCodeOf, onStopSignals, type StopSignal } from '../kernel/stop-signals.ts';
import { positiveInt } from './arguments.ts';
import { CliError, output, progress } from './run.ts';
import { SyncCopy } from './sync-copy.ts';
import { HeldLock, lockBeside, removeLeftoverTemps } from './durable-files.ts';
import { checkSyncFiles, readCopy, readState } from './sync-files.ts';
import { describeWalkFailure, parseConsumerArguments } from './walk.ts';

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
  program
    .command('sync')
    .description(
      'keep a JSON-lines copy of the catalog current through the change feed (first run: a full walk; then only the changes, deletions included)',
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
    .option('--state <file>', 'where the feed cursor is kept between runs (created on the first run)')
    .option('--out <file>', 'the JSON-lines copy to keep current')
    .option('--limit <n>', 'events per feed page, 1..1000', '1000')
    .option(
      '--view <filter>',
      'keep a copy of this view only: a list filter such as "format=ONLINE&country=DE" (format, language, topic, provider, country, city); the state then belongs to that view',
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
      const files = { out, state: resolve(opts.state) };
      // Every refusal comes before the first request: a first run walks the whole catalog before it saves.
      await checkSyncFiles(files);
      const unlock = await lockState(files.state);
      try {
        await Promise.all([removeLeftoverTemps(out), removeLeftoverTemps(files.state)]);
        const state = await readState(files.state);
        const records = await readCopy(out);
        const client = createCatalogClient({
          baseUrl,
          apiKey: key,
          onRetry: ({ attempt, error, delayMs }) =>
            progress(
              `sync: attempt ${attempt} failed (${error.message}); retrying in ${(delayMs / 1000).toFixed(1)} s`,
            ),
        });
        const copy = new SyncCopy({
          records: records ?? new Map(),
          files,
          policy,
          onSave: (size) => progress(`sync: saved ${size} records and the cursor`),
        });
        // A state without its copy (or the reverse) cannot be continued: start over with a walk.
        const view = opts.view === undefined ? {} : { view: opts.view };
        await runSync(copy, files, { client, state: records ? state : null, limit, ...view }, opts.json);
      } finally {
        unlock();
      }
    });
}

/** Locks the state file for this run: a second run on it would interleave its saves with this one's. */
async function lockState(state: string): Promise<() => void> {
  try {
    return await lockBeside(state);
  } catch (error) {
    if (!(error instanceof HeldLock)) throw error;
    const holder =
      error.pid === null
        ? `${error.lockPath} holds no pid: remove it if no sync is running`
        : `pid ${error.pid}, lock file ${error.lockPath}: wait for it to end`;
    throw new CliError(`--state ${state} is in use by another sync (${holder})`, 2);
  }
}

/** Syncs into `copy` (saved to `files`) and reports it (text or --json). */
async function runSync(
  copy: SyncCopy,
  files: { out: string; state: string },
  options: Pick<SyncOptions, 'client' | 'state' | 'limit' | 'view'>,
  json: boolean | undefined,
): Promise<void> {
  const { out, state } = files;
  const started = Date.now();
  let result: SyncResult;
  try {
    result = await syncUntilStopped(copy, {
      ...options,
      onProgress: (p) =>
        progress(
          p.phase === 'walk'
            ? `sync: walking, ${p.walk.unique} of ${p.walk.totalCount} records`
            : `sync: ${p.events} changes applied`,
        ),
    });
  } catch (error) {
    if (!(error instanceof StoppedBySignal)) throw describeWalkFailure(error);
    const where =
      options.state || copy.cursor
        ? `${out} holds ${copy.size} records, saved with their cursor: the next run continues from there`
        : 'stopped before the walk ended, nothing saved: the next run walks again';
    throw new CliError(`sync interrupted by ${error.signal}; ${where}`, exitCodeOf(error.signal));
  } finally {
    if (process.stderr.isTTY) process.stderr.write('\n');
  }
  const summary = {
    mode: result.mode,
    restarted: result.restarted,
    walked: result.walked,
    events: result.events,
    upserts: result.upserts,
    removals: result.removals,
    records: copy.size,
    saves: copy.saves,
    out,
    state,
  };
  output(json, summary, () =>
    [
      result.mode === 'full'
        ? `Walked ${result.walked} records${result.restarted ? ' (the stored cursor had expired: started over)' : ''}, then applied ${result.events} changes.`
        : `Applied ${result.events} changes (${result.upserts} upserts, ${result.removals} removals).`,
      `${out} holds ${copy.size} records${options.view === undefined ? '' : ` of the view ${options.view}`} (${((Date.now() - started) / 1000).toFixed(1)} s); cursor kept in ${state}.`,
    ].join('\n'),
  );
}

class StoppedBySignal extends Error {
  readonly signal: StopSignal;
  constructor(signal: StopSignal) {
    super(`stopped by ${signal}`);
    this.signal = signal;
  }
}

/**
 * Runs the sync and saves what it applied, whatever happens: what was applied is consistent with
 * the cursor of its last batch, and the next run need not fetch it again. The first SIGINT or
 * SIGTERM abandons the request in flight and ends in StoppedBySignal, once saved; a second one
 * exits at once (both files stay whole: each is renamed into place).
 */
async function syncUntilStopped(copy: SyncCopy, options: Omit<SyncOptions, 'apply' | 'signal'>): Promise<SyncResult> {
  const stop = new AbortController();
  const removeSignalHandlers = onStopSignals(
    (signal) => stop.abort(new StoppedBySignal(signal)),
    (signal) => process.exit(exitCodeOf(signal)),
  );
  try {
    return await sync({ ...options, apply: (batch) => copy.apply(batch), signal: stop.signal });
  } catch (error) {
    throw stop.signal.aborted ? stop.signal.reason : error;
  } finally {
    await copy.save();
    removeSignalHandlers();
  }
}
