// receivers add | list | update | disable | enable | remove | rotate-secret | reencrypt | test. Secrets are
// never printed (hasSecret only), except one the service generated for a standard-webhooks receiver,
// once (JSON `secret`); they go in through a file or stdin rather than the command line.
import { type Command, Option } from 'commander';
import { parseId } from '../kernel/ids.ts';
import type { Config } from '../kernel/config.ts';
import type { Database } from '../app/database.ts';
import { EVENT_TYPES } from '../events/derive-event.ts';
import {
  addReceiver,
  disableReceiver,
  enableReceiver,
  getReceiver,
  listReceivers,
  type ReceiverInfo,
  removeReceiver,
  rotateReceiverSecret,
  updateReceiver,
} from '../webhooks/receivers/receivers.ts';
import {
  DEFAULT_GRACE_HOURS,
  NO_GRACE_FOR_SERVICE_V1,
  SIGNATURE_SCHEMES,
} from '../webhooks/receivers/signature-scheme.ts';
import { reencryptSecrets } from '../webhooks/secrets/seal-secrets.ts';
import { resolveSecretKeyring } from '../webhooks/secrets/secret-keys.ts';
import { CliError, cliLogger, output, table, withDatabase } from './run.ts';
import { sendTestEvent } from '../webhooks/delivery/test-event.ts';
import { addSecretOptions, readSecretOption, type SecretOptions } from './secret-input.ts';
import { withBoss } from './with-boss.ts';

const collect = (value: string, previous: string[]) => [...previous, value];
const MODE_HELP =
  'all-events (every event, in order per record) or latest-state (only the newest waiting event of a record is sent)';
const describe = (r: ReceiverInfo) =>
  `${r.id} -> ${r.url} (${r.enabled ? 'enabled' : `disabled: ${r.disabledReason}`}, ${r.hasSecret ? `signed ${r.signatureScheme}` : 'unsigned'}, types: ${r.eventTypes.length ? r.eventTypes.join(', ') : 'all'}, mode: ${r.deliveryMode === 'LATEST_STATE' ? 'latest-state' : 'all-events'})`;
const schemeOption = () =>
  new Option(
    '--scheme <scheme>',
    'how deliveries are signed: service-v1 (SPEC.md section 6, the default) or standard-webhooks (standardwebhooks.com)',
  ).choices(SIGNATURE_SCHEMES);
/** The text after a change: a secret the service generated is printed once, with what to do with it. */
const shown = (text: string, r: ReceiverInfo & { secret?: string }) =>
  r.secret
    ? `${text}\nGenerated signing secret (shown once, store it now; the receiver verifies with it): ${r.secret}`
    : text;
const wholeHours = (value: string) => {
  if (!/^\d+$/.test(value)) throw new CliError(`--grace-hours takes a whole number of hours, got "${value}"`, 2);
  return Number(value);
};

/** The pool, the secret keyring and the target policy, as the service has them. */
async function receiverDeps(config: Config, db: Database) {
  const secrets = await resolveSecretKeyring(config, cliLogger(config));
  return { pool: db.pool, secrets, allowPrivateTargets: config.webhooks.allowPrivateTargets };
}

export function registerReceiverCommands(program: Command, config: Config): void {
  const receivers = program.command('receivers').description('manage webhook receivers');

  addSecretOptions(
    receivers
      .command('add')
      .description('register a receiver; it gets every later event of its types')
      .requiredOption('--url <url>', 'http(s) URL the events are POSTed to'),
    'signing secret',
  )
    .option(
      '--unsigned',
      'add it without a signing secret (its deliveries are not signed: it cannot tell them from forged ones)',
    )
    .option(
      '--type <type>',
      `subscribe to an event type (repeatable; none = all): ${EVENT_TYPES.join(', ')}`,
      collect,
      [],
    )
    .addOption(schemeOption())
    .option('--mode <mode>', MODE_HELP, 'all-events')
    .option('--json', 'print JSON only')
    .action(
      async (
        opts: SecretOptions & {
          url: string;
          unsigned?: boolean;
          type: string[];
          scheme?: string;
          mode: string;
          json?: boolean;
        },
      ) => {
        const secret = await readSecretOption(opts, false);
        const standard = opts.scheme === 'standard-webhooks';
        if (standard && opts.unsigned)
          throw new CliError(
            '--unsigned contradicts --scheme standard-webhooks: its deliveries are always signed (without a secret given, one is generated)',
            2,
          );
        // An unsigned receiver is a choice, never the result of a forgotten option.
        if (secret === undefined && !opts.unsigned && !standard) {
          throw new CliError(
            'a signing secret is required: --secret-file F, --secret-stdin or --secret S (or --unsigned to add a receiver whose deliveries are not signed)',
            2,
          );
        }
        if (secret !== undefined && opts.unsigned)
          throw new CliError('--unsigned contradicts the secret given: give one or the other', 2);
        if (opts.unsigned)
          process.stderr.write(
            'Warning: this receiver gets unsigned deliveries; give it a secret later with `receivers rotate-secret`.\n',
          );
        const added = await withDatabase(config, async (db) =>
          addReceiver(await receiverDeps(config, db), {
            url: opts.url,
            secret,
            types: opts.type,
            scheme: opts.scheme,
            mode: opts.mode,
          }),
        );
        output(opts.json, added, () => shown(`Added receiver ${describe(added)}.`, added));
      },
    );

  receivers
    .command('list')
    .description(
      'list receivers (never their secrets), with why a disabled one is disabled and its waiting and dead deliveries',
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
        'lastSuccessAt',
        'lastFailureAt',
        'waitingDeliveries',
        'deadDeliveries',
      ];
      output(opts.json, list, () =>
        table(
          list.map((r) => ({ ...r, eventTypes: r.eventTypes.length ? r.eventTypes : 'all' })),
          columns,
        ),
      );
    });

  receivers
    .command('update')
    .description('change a receiver URL, its subscription and/or its signature scheme')
    .argument('<id>', 'receiver id (see receivers list)')
    .option('--url <url>', 'new http(s) URL')
    .option('--type <type>', 'new subscription (repeatable), replacing the old one', collect, [])
    .option('--all-types', 'subscribe to every type')
    .addOption(schemeOption())
    .option('--mode <mode>', MODE_HELP)
    .option('--json', 'print JSON only')
    .action(
      async (
        id: string,
        opts: { url?: string; type: string[]; allTypes?: boolean; scheme?: string; mode?: string; json?: boolean },
      ) => {
        const types = opts.allTypes ? [] : opts.type.length ? opts.type : undefined;
        const changed = await withDatabase(config, async (db) =>
          updateReceiver(await receiverDeps(config, db), parseId(id), {
            url: opts.url,
            types,
            scheme: opts.scheme,
            mode: opts.mode,
          }),
        );
        output(opts.json, changed, () => `Receiver ${describe(changed)}.`);
      },
    );

  receivers
    .command('disable')
    .description('stop deliveries to a receiver; its waiting deliveries become dead letters at once')
    .argument('<id>', 'receiver id (see receivers list)')
    .option('--json', 'print JSON only')
    .action(async (id: string, opts: { json?: boolean }) => {
      const changed = await withDatabase(config, (db) => disableReceiver({ pool: db.pool }, parseId(id)));
      output(
        opts.json,
        changed,
        () => `Receiver ${describe(changed)}; ${changed.setAside} waiting deliveries set aside as dead letters.`,
      );
    });

  receivers
    .command('enable')
    .description(
      'resume deliveries to a receiver and restart its failure clock (see deliveries replay-dead for those set aside)',
    )
    .argument('<id>', 'receiver id (see receivers list)')
    .option('--json', 'print JSON only')
    .action(async (id: string, opts: { json?: boolean }) => {
      const changed = await withDatabase(config, (db) => enableReceiver({ pool: db.pool }, parseId(id)));
      output(opts.json, changed, () => `Receiver ${describe(changed)}.`);
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
        removed,
        () =>
          `Removed receiver ${removed.id} (${removed.url}) and ${removed.removedJobs} waiting deliveries or dead letters.`,
      );
    });

  addSecretOptions(
    receivers
      .command('rotate-secret')
      .description(
        'replace a receiver signing secret. standard-webhooks: generated when none is given; both signatures for --grace-hours. ' +
          'service-v1: the secret is required, no grace (let the receiver accept both secrets first: see README)',
      )
      .argument('<id>', 'receiver id (see receivers list)'),
    'new signing secret',
  )
    .option(
      '--grace-hours <hours>',
      `standard-webhooks only: hours the old secret keeps signing too (default ${DEFAULT_GRACE_HOURS}, 0 = none)`,
      wholeHours,
    )
    .option('--json', 'print JSON only')
    .action(async (id: string, opts: SecretOptions & { graceHours?: number; json?: boolean }) => {
      const secret = await readSecretOption(opts, false);
      const changed = await withDatabase(config, async (db) => {
        const deps = await receiverDeps(config, db);
        // Said before anything changes, in the words of the command line.
        const receiver = await getReceiver(deps, parseId(id));
        // Only a standard-webhooks receiver gets a generated secret (an unknown id is refused as before).
        if (secret === undefined && receiver?.signatureScheme !== 'standard-webhooks') {
          throw new CliError(
            'a secret is required: --secret-file F, --secret-stdin or --secret S (a standard-webhooks receiver gets a generated one)',
            2,
          );
        }
        if (receiver?.signatureScheme === 'service-v1' && opts.graceHours !== undefined)
          throw new CliError(`--grace-hours is refused: ${NO_GRACE_FOR_SERVICE_V1}`, 2);
        return await rotateReceiverSecret(deps, parseId(id), { secret, graceHours: opts.graceHours });
      });
      const grace = changed.previousSecretExpiresAt
        ? `; the old secret signs too until ${changed.previousSecretExpiresAt}`
        : '';
      output(opts.json, changed, () => shown(`Rotated the secret of receiver ${describe(changed)}${grace}.`, changed));
    });

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

  receivers
    .command('reencrypt')
    .description(
      'seal every stored secret with SECRET_ENCRYPTION_KEY (after a key rotation; then drop SECRET_ENCRYPTION_KEY_PREVIOUS)',
    )
    .option('--json', 'print JSON only')
    .action(async (opts: { json?: boolean }) => {
      const result = await withDatabase(config, async (db) =>
        reencryptSecrets(db.pool, (await receiverDeps(config, db)).secrets),
      );
      output(
        opts.json,
        result,
        () => `Sealed ${result.resealed} secrets again; ${result.underCurrentKey} are now under key ${result.keyId}.`,
      );
    });
}
