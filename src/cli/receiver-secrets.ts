// receivers rotate-secret | reencrypt: a new signing secret for one receiver (refusals said in the
// words of the command line before anything changes), and every stored secret sealed again with the
// current key. Secrets are never printed, except one the service generated, once.
import type { Command } from 'commander';
import type { Config } from '../kernel/config.ts';
import { parseId } from '../kernel/ids.ts';
import { getReceiver, type ReceiverInfo, rotateReceiverSecret } from '../webhooks/receivers/receivers.ts';
import { DEFAULT_GRACE_HOURS, NO_GRACE_FOR_SERVICE_V1 } from '../webhooks/receivers/signature-scheme.ts';
import { reencryptSecrets } from '../webhooks/secrets/seal-secrets.ts';
import { CliError, output, withDatabase } from './run.ts';
import { addSecretOptions, readSecretOption, type SecretOptions } from './secret-input.ts';
import { describe, receiverDeps, shown, wholeHours } from './receiver-text.ts';
import { receiverJson } from './receiver-add.ts';

export function registerRotateSecret(receivers: Command, config: Config): void {
  addSecretOptions(
    receivers
      .command('rotate-secret')
      .description(
        'replace a receiver signing secret. standard-webhooks: generated when none is given; both signatures for --grace-hours. ' +
          'service-v1: the secret is required, no grace (let the receiver accept both secrets first: see docs/receivers.md)',
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
      const { before, changed } = await withDatabase(config, async (db) => {
        const deps = await receiverDeps(config, db);
        // Said before anything changes, in the words of the command line.
        const before = await getReceiver(deps, parseId(id));
        checkRotation(before, secret, opts.graceHours);
        return {
          before,
          changed: await rotateReceiverSecret(deps, parseId(id), { secret, graceHours: opts.graceHours }),
        };
      });
      // What stops signing now: the secret before the old one, whose grace a second rotation ends.
      const ended = before?.previousSecretExpiresAt ? '; the secret before the old one stopped signing now' : '';
      const grace = changed.previousSecretExpiresAt
        ? `; the old secret signs too until ${changed.previousSecretExpiresAt}${ended}`
        : before?.hasSecret && changed.signatureScheme === 'standard-webhooks'
          ? `; the old secret stopped signing now (no grace)${before.previousSecretExpiresAt ? ', and so did the one before it' : ''}`
          : '';
      output(opts.json, receiverJson(changed), () =>
        shown(`Rotated the secret of receiver ${describe(changed)}${grace}.`, changed),
      );
    });
}

/** The refusals of a rotation, the one that matters first (an unknown id is refused as before, by the service). */
function checkRotation(receiver: ReceiverInfo | null, secret: string | undefined, graceHours: number | undefined) {
  // Not found (exit 3) comes first: no secret could make an unknown id right.
  if (!receiver) return;
  // An unsigned receiver has no old secret that could keep signing: that, not a missing secret, is what is wrong.
  if (!receiver.hasSecret && graceHours !== undefined)
    throw new CliError(
      `--grace-hours is refused: receiver ${receiver.id} has no secret yet (its deliveries are unsigned), so no old secret can sign during a grace; ` +
        'give it its first secret without --grace-hours: --secret-file F, --secret-stdin or --secret S',
      2,
    );
  // Only a standard-webhooks receiver gets a generated secret.
  if (secret === undefined && receiver.signatureScheme !== 'standard-webhooks') {
    throw new CliError(
      'a secret is required: --secret-file F, --secret-stdin or --secret S (a standard-webhooks receiver gets a generated one)',
      2,
    );
  }
  if (receiver.signatureScheme === 'service-v1' && graceHours !== undefined)
    throw new CliError(`--grace-hours is refused: ${NO_GRACE_FOR_SERVICE_V1}`, 2);
}

export function registerReencrypt(receivers: Command, config: Config): void {
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
