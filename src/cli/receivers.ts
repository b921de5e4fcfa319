// receivers add | list | update | disable | enable | resync | remove | rotate-secret | reencrypt | test. Secrets are
// never printed (hasSecret only), except one the service generated for a standard-webhooks receiver,
// once (JSON `secret`); they go in through a file or stdin rather than the command line. add is in
// receiver-add.ts, disable, enable and remove in receiver-states.ts, rotate-secret and reencrypt in
// receiver-secrets.ts.
import type { Command } from 'commander';
import { parseId } from '../kernel/ids.ts';
import type { Config } from '../kernel/config.ts';
import { listReceivers, type Resync, resyncReceiver, updateReceiver } from '../webhooks/receivers/receivers.ts';
import { CliError, output, progress, table, withDatabase } from './run.ts';
import { sendTestEvent } from '../webhooks/delivery/test-event.ts';
import { withBoss } from './with-boss.ts';
import { receiverJson, registerAddReceiver, schemeOption } from './receiver-add.ts';
import { registerReencrypt, registerRotateSecret } from './receiver-secrets.ts';
import { registerStateChanges } from './receiver-states.ts';
import {
  catchUpText,
  collect,
  describe,
  MAX_PER_SECOND_HELP,
  MODE_HELP,
  modeText,
  receiverDeps,
  VIEW_HELP,
} from './receiver-text.ts';

export function registerReceiverCommands(program: Command, config: Config): void {
  const receivers = program.command('receivers').description('manage webhook receivers');
  registerAddReceiver(receivers, config);
  registerList(receivers, config);
  registerUpdate(receivers, config);
  registerStateChanges(receivers, config);
  registerResync(receivers, config);
  registerRotateSecret(receivers, config);
  registerTestEvent(receivers, config);
  registerReencrypt(receivers, config);
}

function registerList(receivers: Command, config: Config): void {
  receivers
    .command('list')
    .description(
      'list receivers (never their secrets), with why a disabled one is disabled, its rate cap, its view, its waiting and dead deliveries, its last catch-up on enable and its last resync',
    )
    .option('--json', 'print JSON only')
    .action(async (opts: { json?: boolean }) => {
      const list = await withDatabase(config, (db) => listReceivers({ pool: db.pool }));
      const columns = [
        'id',
        'url',
        'enabled',
        'disabledReason',
        'hasSecret',
        'signatureScheme',
        'previousSecretExpiresAt',
        'eventTypes',
        'deliveryMode',
        'maxPerSecond',
        'pausedUntil',
        'view',
        'lastSuccessAt',
        'lastFailureAt',
        'waitingDeliveries',
        'deadDeliveries',
        'catchUp',
        'resync',
      ];
      output(opts.json, list.map(receiverJson), () =>
        table(
          list.map((r) => ({
            ...r,
            eventTypes: r.eventTypes.length ? r.eventTypes : 'all',
            deliveryMode: modeText(r),
            maxPerSecond: r.maxPerSecond === null ? 'none' : `${r.maxPerSecond}/s`,
            pausedUntil: r.pausedUntil ?? 'no',
            view: r.view ?? 'every record',
            catchUp: r.catchUp && catchUpText(r.catchUp),
            resync: r.resync && resyncText(r.resync),
          })),
          columns,
        ),
      );
    });
}

function registerUpdate(receivers: Command, config: Config): void {
  // An option and its --no- form both given (`--max-per-second 5 --no-max-per-second`): commander lets
  // the last one win; they are refused instead, as --type with --all-types.
  const given = new Set<string>();
  const update = receivers.command('update');
  for (const name of ['max-per-second', 'no-max-per-second', 'view', 'no-view'])
    update.on(`option:${name}`, () => given.add(name));
  update
    .description('change a receiver URL, subscription, signature scheme, delivery mode, rate cap and/or view')
    .argument('<id>', 'receiver id (see receivers list)')
    .option('--url <url>', 'new http(s) URL')
    .option('--type <type>', 'new subscription (repeatable), replacing the old one', collect, [])
    .option('--all-types', 'subscribe to every type')
    .addOption(schemeOption())
    .option('--mode <mode>', MODE_HELP)
    .option('--max-per-second <n>', MAX_PER_SECOND_HELP)
    .option('--no-max-per-second', 'remove its rate cap')
    .option('--view <view>', `${VIEW_HELP}; a change sends what makes its copy equal to the new view`)
    .option('--no-view', 'remove its view: it gets the events of every record')
    .option('--json', 'print JSON only')
    .action(
      async (
        id: string,
        opts: {
          url?: string;
          type: string[];
          allTypes?: boolean;
          scheme?: string;
          mode?: string;
          maxPerSecond?: string | false;
          view?: string | false;
          json?: boolean;
        },
      ) => {
        for (const name of ['max-per-second', 'view'])
          if (given.has(name) && given.has(`no-${name}`))
            throw new CliError(`--${name} and --no-${name} exclude each other: give one of them`, 2);
        // Both would be a subscription and its opposite: refuse rather than let one silently win.
        if (opts.allTypes && opts.type.length)
          throw new CliError(
            '--type and --all-types exclude each other: give the types, or --all-types for every type',
            2,
          );
        const types = opts.allTypes ? [] : opts.type.length ? opts.type : undefined;
        if (opts.url === undefined && types === undefined && !opts.scheme && !opts.mode && given.size === 0)
          throw new CliError(
            'nothing to change: give --url, --type or --all-types, --scheme, --mode, --max-per-second or --no-max-per-second, --view or --no-view',
            2,
          );
        const changed = await withDatabase(config, async (db) =>
          updateReceiver(await receiverDeps(config, db), parseId(id), {
            url: opts.url,
            types,
            scheme: opts.scheme,
            mode: opts.mode,
            // Given: a cap; --no-max-per-second: none (null); neither: unchanged.
            maxPerSecond: opts.maxPerSecond === false ? null : opts.maxPerSecond,
            // Given: a view; --no-view: every record (null); neither: unchanged.
            view: opts.view === false ? null : opts.view,
          }),
        );
        output(opts.json, receiverJson(changed), () => `Receiver ${describe(changed)}.`);
      },
    );
}

/** A resync in one line: as a catch-up, with its records skipped (no event to send) and what it covered. */
const resyncText = (r: Resync) =>
  `${catchUpText(r)}${r.skipped ? `, ${r.skipped} skipped (no event of a subscribed type)` : ''}, ${r.since ? `changed since ${r.since}` : 'every published record'}`;

function registerResync(receivers: Command, config: Config): void {
  receivers
    .command('resync')
    .description(
      'send a receiver the latest state of every published record (or of every record changed since --since), each once, in order with its live changes; for a receiver that lost its copy. Queued before the command ends; `receivers list` shows its progress',
    )
    .argument('<id>', 'receiver id (see receivers list)')
    .option(
      '--since <time>',
      'only the records changed from then on (an ISO 8601 date-time with its time zone, e.g. 2026-12-01T09:00:00Z, or a date): those archived or deleted since get their removal',
    )
    .option('--json', 'print JSON only')
    .action(async (id: string, opts: { since?: string; json?: boolean }) => {
      const resynced = await withDatabase(config, (db) =>
        resyncReceiver(
          { pool: db.pool },
          parseId(id),
          { since: opts.since },
          {
            onStart: (records) => progress(`resync: ${records} records to queue`),
            onProgress: (records) => progress(`resync: ${records} records queued`),
          },
        ),
      );
      const { run, ...receiver } = resynced;
      output(
        opts.json,
        receiverJson(receiver),
        () =>
          `Receiver ${describe(receiver)}; resync of the latest state of each record: ${receiver.resync ? resyncText(receiver.resync) : `${run.found} records`} (${run.deliveries} sent to the queue now${run.deliveries < run.records ? `, ${run.records - run.deliveries} behind deliveries of their records already on their way` : ''}).`,
      );
    });
}

function registerTestEvent(receivers: Command, config: Config): void {
  receivers
    .command('test')
    .description(
      'send a WEBHOOK_TEST event to one receiver (signed and recorded like any delivery; not in the change feed)',
    )
    .argument('<id>', 'receiver id (see receivers list)')
    .option('--json', 'print JSON only')
    .action(async (id: string, opts: { json?: boolean }) => {
      const sent = await withDatabase(config, (db) =>
        withBoss(config, db, (boss) => sendTestEvent({ pool: db.pool, boss }, parseId(id))),
      );
      output(
        opts.json,
        sent,
        () => `Queued test event ${sent.eventId} (${sent.eventType}) for receiver ${sent.receiverId}.`,
      );
    });
}
