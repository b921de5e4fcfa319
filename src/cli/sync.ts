// sync --base-url URL --state FILE --out FILE.jsonl [--json]
// Keeps a JSON-lines copy of the public catalog current through the change feed (client/sync.ts):
// the first run (or one whose cursor expired) walks the whole list, later runs apply only what
// changed, deletions included. Each batch is written durably to the copy, then the cursor to the
// state file (sync-files.ts), so an interrupted run resumes where it stopped. HTTP only, no database.
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { createCatalogClient } from '../../packages/client/src/catalog-client.ts';
import { sync, type SyncBatch } from '../../packages/client/src/sync.ts';
import type { Config } from '../config.ts';
import { CliError, output, progress } from './run.ts';
import { copyChunks, readCopy, readState, replaceDurably } from './sync-files.ts';
import { describeWalkFailure, parseWalkArguments } from './walk.ts';

type SyncOpts = { baseUrl?: string; key?: string; state?: string; out?: string; json?: boolean };

export function registerSyncCommand(program: Command, config: Config): void {
  program
    .command('sync')
    .description('keep a JSON-lines copy of the catalog current through the change feed (first run: a full walk; then only the changes, deletions included)')
    .addOption(new Option('--base-url <url>', 'base address of the service, without /v1 (or LODS_BASE_URL)').default(config.walk.baseUrl))
    // The description stands in for the value in --help: the key itself is never printed.
    .addOption(new Option('--key <key>', 'API key with catalog:read (or LODS_API_KEY: prefer it, it keeps the key out of shell history)').default(config.walk.apiKey, 'from LODS_API_KEY'))
    .option('--state <file>', 'where the feed cursor is kept between runs (created on the first run)')
    .option('--out <file>', 'the JSON-lines copy to keep current')
    .option('--json', 'print JSON only: { mode, restarted, walked, events, upserts, removals, records, out, state }')
    .action(async (opts: SyncOpts) => {
      const { baseUrl, key, out } = parseWalkArguments({ baseUrl: opts.baseUrl, key: opts.key, out: opts.out, limit: '100' });
      if (!opts.state) throw new CliError('--state is required: the file that keeps the feed cursor between runs', 2);
      const statePath = resolve(opts.state);
      const client = createCatalogClient({
        baseUrl,
        apiKey: key,
        onRetry: ({ attempt, error, delayMs }) => progress(`sync: attempt ${attempt} failed (${error.message}); retrying in ${(delayMs / 1000).toFixed(1)} s`),
      });
      // A state without its copy (or the reverse) cannot be continued: start over with a walk.
      const copy = await readCopy(out);
      const state = copy ? await readState(statePath) : null;
      const lines = copy ?? new Map<string, string>();
      const apply = async (batch: SyncBatch) => {
        if (batch.reset) lines.clear();
        for (const change of batch.changes) {
          if (change.op === 'remove') lines.delete(change.id);
          else lines.set(change.id, JSON.stringify(change.record));
        }
        await replaceDurably(out, copyChunks(lines));
        await replaceDurably(statePath, [`${JSON.stringify({ cursor: batch.cursor, records: lines.size, savedAt: new Date().toISOString() })}\n`]);
      };
      const started = Date.now();
      let result;
      try {
        result = await sync({
          client,
          state,
          apply,
          onProgress: (p) =>
            progress(p.phase === 'walk' ? `sync: walking, ${p.walk.unique} of ${p.walk.totalCount} records` : `sync: ${p.events} changes applied`),
        });
      } catch (error) {
        throw describeWalkFailure(error);
      } finally {
        if (process.stderr.isTTY) process.stderr.write('\n');
      }
      const summary = { mode: result.mode, restarted: result.restarted, walked: result.walked, events: result.events, upserts: result.upserts, removals: result.removals, records: lines.size, out, state: statePath };
      output(opts.json, summary, () =>
        [
          result.mode === 'full'
            ? `Walked ${result.walked} records${result.restarted ? ' (the stored cursor had expired: started over)' : ''}, then applied ${result.events} changes.`
            : `Applied ${result.events} changes (${result.upserts} upserts, ${result.removals} removals).`,
          `${out} holds ${lines.size} records (${((Date.now() - started) / 1000).toFixed(1)} s); cursor kept in ${statePath}.`,
        ].join('\n'),
      );
    });
}
