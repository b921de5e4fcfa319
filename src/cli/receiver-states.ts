// receivers disable | enable | remove: a disable sets the receiver's waiting deliveries aside, an
// enable queues the catch-up of what it missed (and ends a pause it asked for), each said in a
// sentence (or --json).
import type { Command } from 'commander';
import type { Config } from '../kernel/config.ts';
import { parseId } from '../kernel/ids.ts';
import { disableReceiver, enableReceiver, removeReceiver } from '../webhooks/receivers/receivers.ts';
import { receiverJson } from './receiver-add.ts';
import { catchUpText, describe } from './receiver-text.ts';
import { output, progress, withDatabase } from './run.ts';

/** disable, enable, remove. */
export function registerStateChanges(receivers: Command, config: Config): void {
  receivers
    .command('disable')
    .description('stop deliveries to a receiver; its waiting deliveries become dead letters at once')
    .argument('<id>', 'receiver id (see receivers list)')
    .option('--json', 'print JSON only')
    .action(async (id: string, opts: { json?: boolean }) => {
      const changed = await withDatabase(config, (db) => disableReceiver({ pool: db.pool }, parseId(id)));
      output(
        opts.json,
        receiverJson(changed),
        () =>
          `Receiver ${describe(changed)}; ${changed.setAside} waiting deliveries set aside as dead letters` +
          (changed.behindInFlight
            ? `; ${changed.behindInFlight} more, waiting behind its ${changed.inFlight} deliveries in flight, become dead letters as those finish.`
            : '.'),
      );
    });

  receivers
    .command('enable')
    .description(
      'resume deliveries to a receiver and restart its failure clock; a disabled one first gets the latest state of every record it missed (its catch-up, queued before the command ends); a pause it asked for (429/503 Retry-After) ends',
    )
    .argument('<id>', 'receiver id (see receivers list)')
    .option('--json', 'print JSON only')
    .action(async (id: string, opts: { json?: boolean }) => {
      const changed = await withDatabase(config, (db) =>
        enableReceiver({ pool: db.pool }, parseId(id), {
          onProgress: (records) => progress(`catch-up: ${records} records queued`),
        }),
      );
      const pause = changed.pauseEnded
        ? ` Its pause (a 429/503's Retry-After) ended: ${changed.resumedNow} deferred deliveries start now.`
        : '';
      const text =
        changed.wasEnabled && changed.queuedNow > 0
          ? `Receiver ${changed.id} was already enabled; its catch-up cut short is finished now: ${changed.queuedNow} more records queued${changed.catchUp ? ` (${catchUpText(changed.catchUp)})` : ''}.`
          : changed.wasEnabled
            ? `Receiver ${changed.id} was already enabled; nothing new to catch up${changed.catchUp ? ` (its last catch-up, started ${changed.catchUp.startedAt}: ${catchUpText(changed.catchUp)})` : ''}.`
            : `Receiver ${describe(changed)}${changed.catchUp ? `; catch-up of the records it missed, each in its latest state: ${catchUpText(changed.catchUp)}` : ''}.`;
      output(opts.json, receiverJson(changed), () => text + pause);
    });

  receivers
    .command('remove')
    .description('delete a receiver with its attempt history, waiting deliveries and dead letters')
    .argument('<id>', 'receiver id (see receivers list)')
    .option('--json', 'print JSON only')
    .action(async (id: string, opts: { json?: boolean }) => {
      const removed = await withDatabase(config, (db) => removeReceiver({ pool: db.pool }, parseId(id)));
      output(
        opts.json,
        receiverJson(removed),
        () =>
          `Removed receiver ${removed.id} (${removed.url}) and ${removed.removedJobs} waiting deliveries or dead letters.`,
      );
    });
}
