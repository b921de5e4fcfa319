// receivers add | list | disable | enable | remove. Secrets are never printed (hasSecret only).
import type { Command } from 'commander';
import type { Config } from '../config.ts';
import { parseId } from '../catalog/input.ts';
import { EVENT_TYPES } from '../events/derive-event.ts';
import { addReceiver, listReceivers, type ReceiverInfo, removeReceiver, setReceiverEnabled } from '../webhooks/receivers.ts';
import { output, table, withDatabase } from './run.ts';

const collect = (value: string, previous: string[]) => [...previous, value];
const describe = (r: ReceiverInfo) =>
  `${r.id} -> ${r.url} (${r.enabled ? 'enabled' : 'disabled'}, ${r.hasSecret ? 'signed' : 'unsigned'}, types: ${r.eventTypes.length ? r.eventTypes.join(', ') : 'all'})`;

export function registerReceiverCommands(program: Command, config: Config): void {
  const receivers = program.command('receivers').description('manage webhook receivers');

  receivers
    .command('add')
    .description('register a receiver; it gets every later event of its types')
    .requiredOption('--url <url>', 'http(s) URL the events are POSTed to')
    .option('--secret <secret>', 'signing secret (16-512 printable characters); deliveries carry x-service-signature')
    .option('--type <type>', `subscribe to an event type (repeatable; none = all): ${EVENT_TYPES.join(', ')}`, collect, [])
    .option('--json', 'print JSON only')
    .action(async (opts: { url: string; secret?: string; type: string[]; json?: boolean }) => {
      const policy = { allowPrivateTargets: config.webhooks.allowPrivateTargets };
      const added = await withDatabase(config, (db) => addReceiver(db.orm.em.fork(), { url: opts.url, secret: opts.secret, types: opts.type }, policy));
      output(opts.json, added, () => `Added receiver ${describe(added)}.`);
    });

  receivers
    .command('list')
    .description('list receivers (never their secrets)')
    .option('--json', 'print JSON only')
    .action(async (opts: { json?: boolean }) => {
      const list = await withDatabase(config, (db) => listReceivers(db.orm.em.fork()));
      output(opts.json, list, () => table(list.map((r) => ({ ...r, eventTypes: r.eventTypes.length ? r.eventTypes : 'all' })), ['id', 'url', 'enabled', 'hasSecret', 'eventTypes', 'createdAt']));
    });

  for (const [name, enabled, help] of [
    ['disable', false, 'stop deliveries to a receiver; its waiting deliveries become dead letters'],
    ['enable', true, 'resume deliveries to a receiver (see deliveries replay-dead for those set aside)'],
  ] as const) {
    receivers
      .command(name)
      .description(help)
      .argument('<id>', 'receiver id (see receivers list)')
      .option('--json', 'print JSON only')
      .action(async (id: string, opts: { json?: boolean }) => {
        const changed = await withDatabase(config, (db) => setReceiverEnabled(db.orm.em.fork(), parseId(id), enabled));
        output(opts.json, changed, () => `Receiver ${describe(changed)}.`);
      });
  }

  receivers
    .command('remove')
    .description('delete a receiver with its attempt history, waiting deliveries and dead letters')
    .argument('<id>', 'receiver id (see receivers list)')
    .option('--json', 'print JSON only')
    .action(async (id: string, opts: { json?: boolean }) => {
      const removed = await withDatabase(config, (db) => removeReceiver(db.orm.em.fork(), parseId(id)));
      output(opts.json, removed, () => `Removed receiver ${removed.id} (${removed.url}) and ${removed.removedJobs} waiting deliveries or dead letters.`);
    });
}
