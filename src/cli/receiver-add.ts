// receivers add: the URL, types and mode are checked first (a bad URL is the first thing said), then
// the secret: an unsigned receiver is a choice (--unsigned), never the result of a forgotten option.
// Also what every receiver command shares about the one casing of its JSON: --scheme takes both
// spellings, and --json prints every enum as GraphQL names it (receiverJson).
import { type Command, Option } from 'commander';
import type { Config } from '../kernel/config.ts';
import { EVENT_TYPES } from '../events/derive-event.ts';
import { addReceiver, type ReceiverInfo } from '../webhooks/receivers/receivers.ts';
import { parseDeliveryMode, parseEventTypes, parseReceiverView } from '../webhooks/receivers/receiver-input.ts';
import { parseScheme, SCHEME_SPELLINGS, schemeName } from '../webhooks/receivers/signature-scheme.ts';
import { parseReceiverUrl } from '../webhooks/receivers/target-policy.ts';
import { inputChecks } from '../kernel/errors.ts';
import { CliError, output, withDatabase } from './run.ts';
import { addSecretOptions, readSecretOption, type SecretOptions } from './secret-input.ts';
import { collect, describe, MAX_PER_SECOND_HELP, MODE_HELP, receiverDeps, shown, VIEW_HELP } from './receiver-text.ts';
import { parseMaxPerSecond } from '../webhooks/receivers/rate-cap.ts';

/** --scheme of add and update, in either spelling: `standard-webhooks` or `STANDARD_WEBHOOKS` (as --json prints it). */
export const schemeOption = () =>
  new Option(
    '--scheme <scheme>',
    'how deliveries are signed: service-v1 (the default) or standard-webhooks (standardwebhooks.com); also spelled SERVICE_V1, STANDARD_WEBHOOKS (as GraphQL and --json spell them)',
  ).choices(SCHEME_SPELLINGS);

/**
 * A receiver as --json prints it: every enum as GraphQL spells it, so `signatureScheme` says
 * `STANDARD_WEBHOOKS` next to `deliveryMode` `ALL_EVENTS`, and `disabledReason` `FAILING`.
 */
export function receiverJson<T extends Pick<ReceiverInfo, 'signatureScheme' | 'disabledReason'>>(receiver: T) {
  return {
    ...receiver,
    signatureScheme: schemeName(receiver.signatureScheme),
    disabledReason: receiver.disabledReason === null ? null : receiver.disabledReason.toUpperCase(),
  };
}

type AddOptions = SecretOptions & {
  url: string;
  unsigned?: boolean;
  type: string[];
  scheme?: string;
  mode: string;
  maxPerSecond?: string;
  view?: string;
  json?: boolean;
};

export function registerAddReceiver(receivers: Command, config: Config): void {
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
    .option('--max-per-second <n>', MAX_PER_SECOND_HELP)
    .option('--view <view>', VIEW_HELP)
    .option('--json', 'print JSON only')
    .action(async (opts: AddOptions) => {
      // What the service would refuse anyway, every bad option at once, said before anything about
      // the secret (or reading it).
      const { check, done } = inputChecks();
      check(() => parseReceiverUrl(opts.url, config.webhooks));
      check(() => parseEventTypes(opts.type));
      check(() => parseDeliveryMode(opts.mode));
      if (opts.maxPerSecond !== undefined) check(() => parseMaxPerSecond(opts.maxPerSecond!));
      if (opts.view !== undefined) check(() => parseReceiverView(opts.view!));
      const scheme = check(() => parseScheme(opts.scheme));
      done();
      const secret = await readSecretOption(opts, false);
      checkSigning(opts, scheme === 'standard-webhooks', secret);
      if (opts.unsigned)
        process.stderr.write(
          'Warning: this receiver gets unsigned deliveries; give it a secret later with `receivers rotate-secret`.\n',
        );
      const { added, same } = await withDatabase(config, async (db) => {
        const added = await addReceiver(await receiverDeps(config, db), {
          url: opts.url,
          secret,
          types: opts.type,
          scheme,
          mode: opts.mode,
          maxPerSecond: opts.maxPerSecond,
          view: opts.view,
        });
        const { rows } = await db.pool.query<{ id: string }>(
          'select id from receiver where url = $1 and id <> $2 order by created_at',
          [added.url, added.id],
        );
        return { added, same: rows.map((r) => r.id) };
      });
      // Allowed (two views of one endpoint, a second secret), but most often a command run twice.
      if (same.length)
        process.stderr.write(
          `Warning: ${same.length === 1 ? `receiver ${same[0]} already delivers` : `receivers ${same.join(', ')} already deliver`} to this URL: every event is sent to each of them (\`receivers remove ID\` removes one).\n`,
        );
      output(opts.json, receiverJson(added), () => shown(`Added receiver ${describe(added)}.`, added));
    });
}

/** A secret, --unsigned or a standard-webhooks scheme (which generates one), never two that contradict. */
function checkSigning(opts: AddOptions, standard: boolean, secret: string | undefined): void {
  if (standard && opts.unsigned)
    throw new CliError(
      `--unsigned contradicts --scheme ${opts.scheme}: its deliveries are always signed (without a secret given, one is generated)`,
      2,
    );
  if (secret === undefined && !opts.unsigned && !standard) {
    throw new CliError(
      'a signing secret is required: --secret-file F, --secret-stdin or --secret S (or --unsigned to add a receiver whose deliveries are not signed)',
      2,
    );
  }
  if (secret !== undefined && opts.unsigned)
    throw new CliError('--unsigned contradicts the secret given: give one or the other', 2);
}
