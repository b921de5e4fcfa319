// What the receiver commands share: how a receiver is described in one line, the help texts and
// options more than one command has, and the dependencies the service functions take.
import { Option } from 'commander';
import type { Config } from '../kernel/config.ts';
import type { Database } from '../app/database.ts';
import type { CatchUp, ReceiverInfo } from '../webhooks/receivers/receivers.ts';
import { SIGNATURE_SCHEMES } from '../webhooks/receivers/signature-scheme.ts';
import { resolveSecretKeyring } from '../webhooks/secrets/secret-keys.ts';
import { CliError, cliLogger } from './run.ts';

export const collect = (value: string, previous: string[]) => [...previous, value];
export const MODE_HELP =
  'all-events (every event, in order per record) or latest-state (only the newest waiting event of a record is sent)';
export const MAX_PER_SECOND_HELP =
  'rate cap: at most this many deliveries start per second, across every worker (1 to 10000); the rest wait in the queue, not counted as failures';
export const VIEW_HELP =
  "only the events of records in this view, in the list's query-string syntax (format, language, topic, provider, country, city; e.g. 'format=IN_PERSON&country=DE'): PUBLISHED/UPDATED while a record is in it, ARCHIVED/DELETED of one that was, LEARNING_OPPORTUNITY_LEFT_VIEW when an update takes one out";
/** A delivery mode as --mode takes it. */
export const modeText = (r: Pick<ReceiverInfo, 'deliveryMode'>) =>
  r.deliveryMode === 'LATEST_STATE' ? 'latest-state' : 'all-events';
/** A catch-up in one line: its records, how many are queued, how many not yet delivered. */
export const catchUpText = (c: CatchUp) => `${c.total} records, ${c.queued} queued, ${c.pending} pending`;

export const describe = (r: ReceiverInfo) =>
  `${r.id} -> ${r.url} (${r.enabled ? 'enabled' : `disabled: ${r.disabledReason}`}, ${r.hasSecret ? `signed ${r.signatureScheme}` : 'unsigned'}, types: ${r.eventTypes.length ? r.eventTypes.join(', ') : 'all'}, mode: ${modeText(r)}${r.maxPerSecond === null ? '' : `, at most ${r.maxPerSecond}/s`}${r.view === null ? '' : `, view: ${r.view}`})`;
export const schemeOption = () =>
  new Option(
    '--scheme <scheme>',
    'how deliveries are signed: service-v1 (the default) or standard-webhooks (standardwebhooks.com)',
  ).choices(SIGNATURE_SCHEMES);
/** The text after a change: a secret the service generated is printed once, with what to do with it. */
export const shown = (text: string, r: ReceiverInfo & { secret?: string }) =>
  r.secret
    ? `${text}\nGenerated signing secret (shown once, store it now; the receiver verifies with it): ${r.secret}`
    : text;
export const wholeHours = (value: string) => {
  if (!/^\d+$/.test(value)) throw new CliError(`--grace-hours takes a whole number of hours, got "${value}"`, 2);
  return Number(value);
};

/** The pool, the secret keyring and the target policy, as the service has them. */
export async function receiverDeps(config: Config, db: Database) {
  const secrets = await resolveSecretKeyring(config, cliLogger(config));
  return { pool: db.pool, secrets, allowPrivateTargets: config.webhooks.allowPrivateTargets };
}
