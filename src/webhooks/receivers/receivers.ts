// Receiver management: one function per operation, used by both the CLI (cli/receivers.ts) and
// GraphQL (graphql/receiver-resolvers.ts), so that both validate and act alike. Secrets are
// write-only: sealed (secret-box.ts) before they reach a statement, never returned, logged or put
// in an error.
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import type { PgBoss } from 'pg-boss';
import { badInput, notFound } from '../../errors.ts';
import { EVENT_TYPES, type EventType } from '../../events/derive-event.ts';
import { receiversDisabled } from '../../metrics.ts';
import { inTransaction } from '../../db/pg-transaction.ts';
import { removeReceiverJobs } from '../queue/receiver-jobs.ts';
import { setAsideWaitingDeliveries } from '../queue/settle-jobs.ts';
import { DELIVERY_MODES, type DeliveryMode, readReceivers, type ReceiverInfo } from './receiver-reads.ts';
import type { SecretKeyring } from '../secrets/secret-box.ts';
import { parseReceiverUrl } from './target-policy.ts';

export type { ReceiverInfo } from './receiver-reads.ts';

export type ReceiverDeps = { pool: Pool; boss: PgBoss; secrets: SecretKeyring; allowPrivateTargets: boolean };

const SECRET_MIN = 16;
const SECRET_MAX = 512;

export function parseEventTypes(values: readonly string[]): EventType[] {
  const unknown = values.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length) throw badInput([{ name: 'type', reason: `unknown event type ${unknown.join(', ')}; known: ${EVENT_TYPES.join(', ')}` }]);
  return [...new Set(values)] as EventType[];
}

export function parseSecret(secret: string): string {
  if (secret.length < SECRET_MIN || secret.length > SECRET_MAX || !/^[\x21-\x7e]+$/.test(secret)) {
    throw badInput([{ name: 'secret', reason: `must be ${SECRET_MIN} to ${SECRET_MAX} printable ASCII characters without spaces` }]);
  }
  return secret;
}

/** ALL_EVENTS / LATEST_STATE (GraphQL) or all-events / latest-state (CLI). */
export function parseDeliveryMode(value: string): DeliveryMode {
  const mode = value.toUpperCase().replaceAll('-', '_');
  if (!(DELIVERY_MODES as readonly string[]).includes(mode)) throw badInput([{ name: 'mode', reason: 'must be all-events or latest-state' }]);
  return mode as DeliveryMode;
}
const modeColumn = (mode: DeliveryMode | null) => (mode === null ? null : mode.toLowerCase());

async function one(deps: Pick<ReceiverDeps, 'pool'>, id: string): Promise<ReceiverInfo> {
  const [receiver] = await readReceivers(deps.pool, id);
  if (!receiver) throw notFound(`Receiver ${id}`);
  return receiver;
}

export async function listReceivers(deps: Pick<ReceiverDeps, 'pool'>): Promise<ReceiverInfo[]> {
  return await readReceivers(deps.pool, null);
}

/** One receiver, or null when there is none. */
export async function getReceiver(deps: Pick<ReceiverDeps, 'pool'>, id: string): Promise<ReceiverInfo | null> {
  return (await readReceivers(deps.pool, id))[0] ?? null;
}

export async function addReceiver(
  deps: Pick<ReceiverDeps, 'pool' | 'secrets' | 'allowPrivateTargets'>,
  input: { url: string; secret?: string | null; types?: readonly string[]; mode?: string | null },
): Promise<ReceiverInfo> {
  const url = parseReceiverUrl(input.url, deps);
  const secret = input.secret === undefined || input.secret === null ? null : parseSecret(input.secret);
  const eventTypes = parseEventTypes(input.types ?? []);
  const mode = parseDeliveryMode(input.mode ?? 'ALL_EVENTS');
  const id = randomUUID();
  const sealed = secret === null ? null : deps.secrets.seal(secret, id);
  await deps.pool.query(
    `insert into receiver (id, url, secret_ciphertext, secret_key_id, event_types, enabled, created_at) values ($1, $2, $3, $4, $5, true, now())`,
    [id, url, sealed?.ciphertext ?? null, sealed?.keyId ?? null, eventTypes],
  );
  if (mode !== 'ALL_EVENTS') await deps.pool.query(`update receiver set delivery_mode = $2 where id = $1`, [id, modeColumn(mode)]);
  return await one(deps, id);
}

/**
 * Changes the URL, the subscribed types (an empty list = every type) and/or the delivery mode;
 * deliveries already queued keep going (a change to LATEST_STATE applies from the next event on).
 */
export async function updateReceiver(
  deps: Pick<ReceiverDeps, 'pool' | 'allowPrivateTargets'>,
  id: string,
  input: { url?: string | null; types?: readonly string[] | null; mode?: string | null },
): Promise<ReceiverInfo> {
  const url = input.url === undefined || input.url === null ? null : parseReceiverUrl(input.url, deps);
  const eventTypes = input.types === undefined || input.types === null ? null : parseEventTypes(input.types);
  const mode = input.mode === undefined || input.mode === null ? null : parseDeliveryMode(input.mode);
  const { rowCount } = await deps.pool.query(`update receiver set url = coalesce($2, url), event_types = coalesce($3, event_types), delivery_mode = coalesce($4, delivery_mode) where id = $1`, [
    id,
    url,
    eventTypes,
    modeColumn(mode),
  ]);
  if (!rowCount) throw notFound(`Receiver ${id}`);
  return await one(deps, id);
}

/** Seals a new signing secret; the next attempt of every delivery is signed with it. */
export async function rotateReceiverSecret(deps: Pick<ReceiverDeps, 'pool' | 'secrets'>, id: string, secret: string): Promise<ReceiverInfo> {
  const sealed = deps.secrets.seal(parseSecret(secret), id);
  const { rowCount } = await deps.pool.query(`update receiver set secret_ciphertext = $2, secret_key_id = $3, secret = null where id = $1`, [id, sealed.ciphertext, sealed.keyId]);
  if (!rowCount) throw notFound(`Receiver ${id}`);
  return await one(deps, id);
}

/**
 * Stops deliveries to a receiver: its waiting deliveries become dead letters at once (replayable
 * after `enable`). Disabling a disabled receiver changes nothing (it keeps its first reason).
 */
export async function disableReceiver(deps: Pick<ReceiverDeps, 'pool'>, id: string): Promise<ReceiverInfo & { setAside: number }> {
  const { setAside, wasEnabled } = await inTransaction(deps.pool, async (client) => {
    const { rows } = await client.query<{ was_enabled: boolean }>(
      `update receiver r set enabled = false, disabled_reason = coalesce(r.disabled_reason, 'manual'), disabled_at = coalesce(r.disabled_at, now())
         from (select id, enabled as was_enabled from receiver where id = $1 for no key update) old
        where r.id = old.id returning old.was_enabled`,
      [id],
    );
    if (!rows[0]) throw notFound(`Receiver ${id}`);
    return { wasEnabled: rows[0].was_enabled, setAside: await setAsideWaitingDeliveries(client, [id]) };
  });
  if (wasEnabled) receiversDisabled.inc({ reason: 'manual' });
  return { ...(await one(deps, id)), setAside };
}

/** Resumes deliveries and restarts the failure clock (one failure after `enable` does not disable it again). */
export async function enableReceiver(deps: Pick<ReceiverDeps, 'pool'>, id: string): Promise<ReceiverInfo> {
  const { rowCount } = await deps.pool.query(`update receiver set enabled = true, disabled_reason = null, disabled_at = null, failing_since = null where id = $1`, [id]);
  if (!rowCount) throw notFound(`Receiver ${id}`);
  return await one(deps, id);
}

/**
 * Removes a receiver with its attempt history, its pending deliveries and its dead letters, in one
 * transaction. A delivery already in flight finishes; the worker drops its follow-up.
 */
export async function removeReceiver(deps: Pick<ReceiverDeps, 'pool'>, id: string): Promise<ReceiverInfo & { removedJobs: number }> {
  const info = await one(deps, id);
  return await inTransaction(deps.pool, async (client, db) => {
    const removedJobs = await removeReceiverJobs(db, id);
    const { rowCount } = await client.query('delete from receiver where id = $1', [id]);
    if (!rowCount) throw notFound(`Receiver ${id}`);
    return { ...info, removedJobs };
  });
}
