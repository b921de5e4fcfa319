// What the catch-up and resync tests share: records in a known state, changed at random one event at
// a time by one writer (so the order of the events is the order of the calls), and the deliveries a
// receiver acknowledged since a point, per record.
import { randomUUID } from 'node:crypto';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import type { CatalogWrites } from '../../src/catalog/catalog-writes.ts';
import { testDb } from '../hooks.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import type { WebhookStack } from '../support/webhooks.ts';
import { drained } from './convergence-support.ts';

export type RecordState = 'PUBLISHED' | 'ARCHIVED' | 'GONE';
export type Body = { id: string; type: string; resource: { id: string; version: number } };

/** New content for record `id` (a fresh title: an UPDATED event when it is published). */
export const content = (id: string) =>
  parseLearningOpportunityInput(buildLearningOpportunityInput({ id, title: `Title ${randomUUID().slice(0, 8)}` }));

/**
 * The odds of each change, by the record's state: a published one is updated (`update`), archived
 * (`archive`) or else deleted; an archived one re-published (`republish`) or else deleted; a deleted
 * one re-created and published.
 */
export type ChangeOdds = { update: number; archive: number; republish: number };

/** `total` changes to the records of `states` (each one event), chosen at random with `odds`; `states` follows. */
export async function changeRecords(
  writes: CatalogWrites,
  states: Map<string, RecordState>,
  total: number,
  random: () => number,
  odds: ChangeOdds,
): Promise<void> {
  const ids = [...states.keys()];
  for (let n = 0; n < total; n++) {
    const id = ids[Math.floor(random() * ids.length)]!;
    const state = states.get(id)!;
    const r = random();
    if (state === 'PUBLISHED') {
      if (r < odds.update) await writes.upsert(content(id));
      else if (r < odds.update + odds.archive) {
        await writes.archive(id);
        states.set(id, 'ARCHIVED');
      } else {
        await writes.delete(id);
        states.set(id, 'GONE');
      }
    } else if (state === 'ARCHIVED') {
      if (r < odds.republish) {
        await writes.publish(id);
        states.set(id, 'PUBLISHED');
      } else {
        await writes.delete(id);
        states.set(id, 'GONE');
      }
    } else {
      await writes.upsert(content(id));
      await writes.publish(id);
      states.set(id, 'PUBLISHED');
    }
  }
}

/** `count` new published records (two batch writes), their deliveries drained. */
export async function publishNew(stack: WebhookStack, count: number): Promise<Map<string, RecordState>> {
  const ids = Array.from({ length: count }, () => randomUUID());
  await stack.api.writes.upsertMany(ids.map(content));
  await stack.api.writes.publishMany(ids);
  await drained(testDb(), 30_000);
  return new Map(ids.map((id) => [id, 'PUBLISHED' as RecordState]));
}

/** Per resource id, the bodies a receiver acknowledged from index `from` of `bodies` on. */
export function deliveredSince(bodies: readonly string[], from: number): Map<string, Body[]> {
  const by = new Map<string, Body[]>();
  for (const text of bodies.slice(from)) {
    const body = JSON.parse(text) as Body;
    by.set(body.resource.id, [...(by.get(body.resource.id) ?? []), body]);
  }
  return by;
}
