// Receiver management: one function per operation, used by both the CLI (cli/receivers.ts) and
// GraphQL (graphql/receiver-resolvers.ts), so that both validate and act alike. Secrets are
// write-only: sealed (secret-box.ts) before they reach a statement, never returned, logged or put
// in an error.
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import type { PgBoss } from 'pg-boss';
import { badInput, inputChecks, notFound } from '../../kernel/errors.ts';
import { inTransaction } from '../../db/pg-transaction.ts';
import { removeReceiverJobs } from '../queue/receiver-jobs.ts';
import { type DeliveryMode, readReceiver, readReceivers, type ReceiverInfo } from './receiver-reads.ts';
import {
  parseDeliveryMode,
  parseEventTypes,
  parseReceiverView,
  parseSecret,
  type ReceiverSettings,
} from './receiver-input.ts';
import { queueViewChange, startViewChange } from '../catch-up/view-change.ts';
import { lockRouting } from '../../db/routing-lock.ts';
import { parseOptionalMaxPerSecond, setRateCap } from './rate-cap.ts';
import type { SecretKeyring } from '../secrets/secret-box.ts';
import {
  generateStandardSecret,
  isStandardSecret,
  parseScheme,
  parseStandardSecret,
  schemeColumn,
  STANDARD_SECRET_RULE,
} from './signature-scheme.ts';
import { parseReceiverUrl } from './target-policy.ts';

export type { CatchUp, ReceiverInfo, Resync } from './receiver-reads.ts';
export { resyncReceiver } from '../catch-up/resync.ts';
export { rotateReceiverSecret } from './secret-rotation.ts';
export { disableReceiver, enableReceiver } from './receiver-switch.ts';

export type ReceiverDeps = { pool: Pool; boss: PgBoss; secrets: SecretKeyring; allowPrivateTargets: boolean };

/** A receiver as the call that generated its secret returns it: the one time that secret is shown. */
export type ReceiverWithSecret = ReceiverInfo & { secret?: string };

const modeColumn = (mode: DeliveryMode | null) => (mode === null ? null : mode.toLowerCase());

const one = (deps: Pick<ReceiverDeps, 'pool'>, id: string): Promise<ReceiverInfo> => readReceiver(deps.pool, id);

export async function listReceivers(deps: Pick<ReceiverDeps, 'pool'>): Promise<ReceiverInfo[]> {
  return await readReceivers(deps.pool, null);
}

/** One receiver, or null when there is none. */
export async function getReceiver(deps: Pick<ReceiverDeps, 'pool'>, id: string): Promise<ReceiverInfo | null> {
  return (await readReceivers(deps.pool, id))[0] ?? null;
}

export async function addReceiver(
  deps: Pick<ReceiverDeps, 'pool' | 'secrets' | 'allowPrivateTargets'>,
  input: ReceiverSettings & { url: string; secret?: string | null },
): Promise<ReceiverWithSecret> {
  // Every bad setting named at once.
  const { check, done } = inputChecks();
  const url = check(() => parseReceiverUrl(input.url, deps));
  const scheme = check(() => parseScheme(input.scheme)) ?? 'service-v1';
  const given = input.secret ?? null;
  // A Standard Webhooks receiver is always signed: without a secret given, the service makes one.
  const generated = scheme === 'standard-webhooks' && given === null ? generateStandardSecret() : null;
  const secret =
    generated ??
    (given === null
      ? null
      : check(() => (scheme === 'standard-webhooks' ? parseStandardSecret(given) : parseSecret(given))));
  const eventTypes = check(() => parseEventTypes(input.types ?? []));
  const mode = check(() => parseDeliveryMode(input.mode ?? 'ALL_EVENTS'));
  const maxPerSecond = check(() => parseOptionalMaxPerSecond(input.maxPerSecond));
  const view = check(() => (input.view === undefined || input.view === null ? null : parseReceiverView(input.view)));
  done();
  const id = randomUUID();
  const sealed = secret === null ? null : deps.secrets.seal(secret, id);
  // With a cap, the receiver and its pace row (rate-cap.ts) together; after the catalog writes under
  // way, which routed without it (db/routing-lock.ts): it gets every change committed after it.
  await inTransaction(deps.pool, async (client) => {
    await lockRouting(client);
    await client.query(
      `insert into receiver (id, url, secret_ciphertext, secret_key_id, event_types, enabled, created_at, signature_scheme, delivery_mode, view) values ($1, $2, $3, $4, $5, true, now(), $6, $7, $8)`,
      [
        id,
        url,
        sealed?.ciphertext ?? null,
        sealed?.keyId ?? null,
        eventTypes,
        schemeColumn(scheme),
        modeColumn(mode),
        view,
      ],
    );
    if (maxPerSecond !== null) await setRateCap(client, id, maxPerSecond);
  });
  const added = await one(deps, id);
  return generated ? { ...added, secret: generated } : added;
}

/**
 * Changes the URL, the subscribed types (an empty list = every type), the signature scheme, the
 * delivery mode, the rate cap (`maxPerSecond`: a number sets it, null removes it, omitted keeps
 * it) and/or the view (`view`: a view sets it, null removes it, omitted keeps it; a change sends what
 * makes the receiver's copy equal to the new view: catch-up/view-change.ts); deliveries already queued keep going, and their next attempt is signed in the new scheme (a
 * change to LATEST_STATE applies from the next event on; a cap from each worker's next load of the
 * receiver, rate-gate.ts). A receiver switches to standard-webhooks only with a whsec_ secret (give one
 * with rotate-secret first); one switched back to service-v1 loses a previous secret still in its grace.
 */
export async function updateReceiver(
  deps: Pick<ReceiverDeps, 'pool' | 'allowPrivateTargets' | 'secrets'>,
  id: string,
  input: ReceiverSettings,
): Promise<ReceiverInfo> {
  // Every bad setting named at once.
  const { check, done } = inputChecks();
  const url = check(() => (input.url === undefined || input.url === null ? null : parseReceiverUrl(input.url, deps)));
  const eventTypes = check(() =>
    input.types === undefined || input.types === null ? null : parseEventTypes(input.types),
  );
  const scheme = check(() => parseScheme(input.scheme));
  const mode = check(() => (input.mode === undefined || input.mode === null ? null : parseDeliveryMode(input.mode)));
  const maxPerSecond = check(() => parseOptionalMaxPerSecond(input.maxPerSecond));
  const view = check(() =>
    input.view === undefined ? undefined : input.view === null ? null : parseReceiverView(input.view),
  );
  done();
  // A view that changes: the routing lock first, before this transaction locks the receiver's row
  // (the settling statements wait for that row while the lock waits for the writes under way).
  const changesView =
    view !== undefined &&
    (await deps.pool.query<{ view: string | null }>('select view from receiver where id = $1', [id])).rows[0]?.view !==
      view;
  const viewChanged = await inTransaction(deps.pool, async (client) => {
    // New event types route the writes after this one (as a new view does).
    if (changesView || eventTypes !== null) await lockRouting(client);
    if (scheme === 'standard-webhooks') {
      const { rows } = await client.query<{
        secret: string | null;
        secret_ciphertext: Buffer | null;
        secret_key_id: string | null;
      }>('select secret, secret_ciphertext, secret_key_id from receiver where id = $1 for no key update', [id]);
      const row = rows[0];
      if (!row) throw notFound(`Receiver ${id}`);
      const secret =
        row.secret ??
        (row.secret_ciphertext && row.secret_key_id
          ? deps.secrets.open({ ciphertext: row.secret_ciphertext, keyId: row.secret_key_id }, id)
          : null);
      if (secret === null || !isStandardSecret(secret)) {
        throw badInput([
          {
            name: 'signatureScheme',
            reason: `${STANDARD_SECRET_RULE}, and this receiver's secret is not one: give it one with rotate-secret first (it signs SERVICE_V1 deliveries as well)`,
          },
        ]);
      }
    }
    const { rowCount } = await client.query(
      `update receiver set url = coalesce($2, url), event_types = coalesce($3, event_types), signature_scheme = coalesce($4, signature_scheme),
              delivery_mode = coalesce($5, delivery_mode),
              previous_secret_ciphertext = case when $4 = 'service_v1' then null else previous_secret_ciphertext end,
              previous_secret_key_id = case when $4 = 'service_v1' then null else previous_secret_key_id end,
              previous_secret_expires_at = case when $4 = 'service_v1' then null else previous_secret_expires_at end
        where id = $1`,
      [id, url, eventTypes, scheme === undefined ? null : schemeColumn(scheme), modeColumn(mode)],
    );
    if (!rowCount) throw notFound(`Receiver ${id}`);
    if (input.maxPerSecond !== undefined) await setRateCap(client, id, maxPerSecond);
    return view === undefined ? false : await startViewChange(client, id, view);
  });
  // What makes the receiver's copy equal to its new view, as its resync queues it (view-change.ts).
  if (viewChanged) await queueViewChange(deps.pool, id);
  return await one(deps, id);
}

/**
 * Removes a receiver with its attempt history, its pending deliveries and its dead letters, in one
 * transaction. A delivery already in flight finishes; the worker drops its follow-up.
 */
export async function removeReceiver(
  deps: Pick<ReceiverDeps, 'pool'>,
  id: string,
): Promise<ReceiverInfo & { removedJobs: number }> {
  const info = await one(deps, id);
  return await inTransaction(deps.pool, async (client, db) => {
    const removedJobs = await removeReceiverJobs(db, id);
    const { rowCount } = await client.query('delete from receiver where id = $1', [id]);
    if (!rowCount) throw notFound(`Receiver ${id}`);
    return { ...info, removedJobs };
  });
}
