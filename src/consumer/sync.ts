// Keeps a JSON-lines copy of the public catalog (or of a view: `format=IN_PERSON&country=DE`, the
// list's syntax restricted to format, language, topic, provider, country and city) current through
// the change feed (client/sync.ts); `npm run cli -- sync`, registered in cli/sync.ts.
// The first run (or one whose cursor expired) walks the whole list, later runs apply only what
// changed, deletions included. The copy lives in memory during the run and is saved with its cursor
// now and then (sync-copy.ts), at the end, on a failure and on Ctrl-C or SIGTERM, so an interrupted
// run resumes from the last save. HTTP only, no database. Before its first request it refuses (exit 2)
// files it could only fail on or damage (sync-files.ts), and locks the state so that two runs on it
// never interleave their saves.
import { createCatalogClient, sync, type SyncOptions, type SyncResult } from '@lods/client';
import { exitCodeOf, onStopSignals, type StopSignal } from '../kernel/stop-signals.ts';
import { ConsumerError, type Progress, type ToolReport } from './consumer-tools.ts';
import { HeldLock, lockBeside, removeLeftoverTemps } from './durable-files.ts';
import { type SavePolicy, SyncCopy } from './sync-copy.ts';
import { checkSyncFiles, readCopy, readState } from './sync-files.ts';
import { describeWalkFailure } from './walk.ts';

/**
 * What a sync needs, checked (cli/sync.ts parses them): `out` (the copy) and `state` (its cursor)
 * are absolute paths, `limit` the events per feed page, `view` the view's filter if the copy is of one.
 */
export type SyncArguments = {
  baseUrl: string;
  key: string;
  out: string;
  state: string;
  limit: number;
  view?: string;
  policy: SavePolicy;
};

export type SyncSummary = Pick<SyncResult, 'mode' | 'restarted' | 'walked' | 'events' | 'upserts' | 'removals'> & {
  records: number;
  saves: number;
  out: string;
  state: string;
};

/**
 * Brings the copy at `out` up to date through the feed (a full walk first when there is no copy and
 * state to continue from), saving it with its cursor in `state`, and reports on `progress`.
 */
export async function syncToFile(args: SyncArguments, progress: Progress): Promise<ToolReport<SyncSummary>> {
  const { baseUrl, key, limit, policy } = args;
  const files = { out: args.out, state: args.state };
  // Every refusal comes before the first request: a first run walks the whole catalog before it saves.
  await checkSyncFiles(files);
  const unlock = await lockState(files.state);
  try {
    await Promise.all([removeLeftoverTemps(files.out), removeLeftoverTemps(files.state)]);
    const state = await readState(files.state);
    const records = await readCopy(files.out);
    const client = createCatalogClient({
      baseUrl,
      apiKey: key,
      onRetry: ({ attempt, error, delayMs }) =>
        progress.line(
          `sync: attempt ${attempt} failed (${error.message}); retrying in ${(delayMs / 1000).toFixed(1)} s`,
        ),
    });
    const copy = new SyncCopy({
      records: records ?? new Map(),
      files,
      policy,
      onSave: (size) => progress.line(`sync: saved ${size} records and the cursor`),
    });
    // A state without its copy (or the reverse) cannot be continued: start over with a walk.
    const view = args.view === undefined ? {} : { view: args.view };
    return await runSync(copy, files, { client, state: records ? state : null, limit, ...view }, progress);
  } finally {
    unlock();
  }
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
    throw new ConsumerError(`--state ${state} is in use by another sync (${holder})`, 2);
  }
}

/** Syncs into `copy` (saved to `files`) and says what it did. */
async function runSync(
  copy: SyncCopy,
  files: { out: string; state: string },
  options: Pick<SyncOptions, 'client' | 'state' | 'limit' | 'view'>,
  progress: Progress,
): Promise<ToolReport<SyncSummary>> {
  const { out, state } = files;
  const started = Date.now();
  let result: SyncResult;
  try {
    result = await syncUntilStopped(copy, {
      ...options,
      onProgress: (p) =>
        progress.line(
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
    throw new ConsumerError(`sync interrupted by ${error.signal}; ${where}`, exitCodeOf(error.signal));
  } finally {
    progress.end();
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
  const text = [
    result.mode === 'full'
      ? `Walked ${result.walked} records${result.restarted ? ' (the stored cursor had expired: started over)' : ''}, then applied ${result.events} changes.`
      : `Applied ${result.events} changes (${result.upserts} upserts, ${result.removals} removals).`,
    `${out} holds ${copy.size} records${options.view === undefined ? '' : ` of the view ${options.view}`} (${((Date.now() - started) / 1000).toFixed(1)} s); cursor kept in ${state}.`,
  ].join('\n');
  return { summary, text };
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
