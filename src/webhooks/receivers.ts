// Receivers: provisioned by operators (SPEC.md 4.3: no endpoint manages them). A receiver is shown
// without its secret (`hasSecret` only).
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { fromKysely } from 'pg-boss';
import { badInput, notFound } from '../errors.ts';
import { EVENT_TYPES, type EventType } from '../events/derive-event.ts';
import { Receiver } from './entities.ts';
import { removeReceiverJobs } from './queue.ts';
import { parseReceiverUrl } from './target-policy.ts';

export type ReceiverInfo = { id: string; url: string; hasSecret: boolean; eventTypes: EventType[]; enabled: boolean; createdAt: string };

const SECRET_MIN = 16;
const SECRET_MAX = 512;

function present(r: { id: string; url: string; secret?: string | null; eventTypes: string[]; enabled: boolean; createdAt: Date }): ReceiverInfo {
  return { id: r.id, url: r.url, hasSecret: Boolean(r.secret), eventTypes: r.eventTypes as EventType[], enabled: r.enabled, createdAt: r.createdAt.toISOString() };
}

export function parseEventTypes(values: readonly string[]): EventType[] {
  const unknown = values.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  if (unknown.length) throw badInput([{ name: 'type', reason: `unknown event type ${unknown.join(', ')}; known: ${EVENT_TYPES.join(', ')}` }]);
  return [...new Set(values)] as EventType[];
}

function parseSecret(secret: string | undefined): string | null {
  if (secret === undefined) return null;
  if (secret.length < SECRET_MIN || secret.length > SECRET_MAX || !/^[\x21-\x7e]+$/.test(secret)) {
    throw badInput([{ name: 'secret', reason: `must be ${SECRET_MIN} to ${SECRET_MAX} printable ASCII characters without spaces` }]);
  }
  return secret;
}

export async function addReceiver(em: EntityManager, input: { url: string; secret?: string; types?: readonly string[] }, policy: { allowPrivateTargets: boolean }): Promise<ReceiverInfo> {
  const url = parseReceiverUrl(input.url, policy);
  const secret = parseSecret(input.secret);
  const eventTypes = parseEventTypes(input.types ?? []);
  const receiver = em.create(Receiver, { id: randomUUID(), url, secret, eventTypes, enabled: true, createdAt: new Date() });
  await em.flush();
  return present(receiver);
}

export async function listReceivers(em: EntityManager): Promise<ReceiverInfo[]> {
  return (await em.find(Receiver, {}, { orderBy: { createdAt: 'asc', id: 'asc' } })).map(present);
}

export async function setReceiverEnabled(em: EntityManager, id: string, enabled: boolean): Promise<ReceiverInfo> {
  const receiver = await em.findOne(Receiver, { id });
  if (!receiver) throw notFound(`Receiver ${id}`);
  receiver.enabled = enabled;
  await em.flush();
  return present(receiver);
}

/**
 * Removes a receiver with its attempt history, its pending deliveries and its dead letters, in one
 * transaction. A delivery already in flight finishes; the worker drops its follow-up.
 */
export async function removeReceiver(em: EntityManager, id: string): Promise<ReceiverInfo & { removedJobs: number }> {
  return await em.transactional(async (tx) => {
    const receiver = await tx.findOne(Receiver, { id });
    if (!receiver) throw notFound(`Receiver ${id}`);
    const info = present(receiver);
    const removedJobs = await removeReceiverJobs(fromKysely(tx.getKysely()), id);
    await tx.nativeDelete(Receiver, { id });
    return { ...info, removedJobs };
  });
}
