// v1 may add event types, and clients ignore the ones they do not know (docs/contract.md,
// "Versioning"): the client's sync and the receiver kit's feed repair pass over such an event. The
// client took any type but PUBLISHED and UPDATED for a removal, so a new kind of event about a public
// record took it out of the copy; the kit's repair threw on it and stopped.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createCatalogClient, sync, type SyncBatch } from '@lods/client';
import { repairFromFeed, type WebhookEvent } from '@lods/receiver-kit';
import { fakeRecord } from './fake-servers.ts';

/** A fetch answering every /v1/events request with one page of `events`, the last page. */
const feedOf =
  (events: unknown[]): typeof globalThis.fetch =>
  async () =>
    new Response(
      JSON.stringify({ results: events, pagination: { limit: 1000, after: 'a', next: 'b', hasMore: false } }),
      {
        status: 200,
        headers: { 'content-type': 'application/json' },
      },
    );

describe('event types a client does not know', () => {
  const id = randomUUID();
  const record = fakeRecord(id, '2026-05-01T00:00:00.000Z');
  const event = (type: string, version: number, data: unknown) => ({
    id: randomUUID(),
    type,
    occurredAt: '2026-05-01T00:00:00.000Z',
    resource: { type: 'LEARNING_OPPORTUNITY', id, version },
    data,
  });
  const events = [
    event('LEARNING_OPPORTUNITY_UPDATED', 2, record),
    event('LEARNING_OPPORTUNITY_FEATURED', 3, record),
    event('LEARNING_OPPORTUNITY_ARCHIVED', 4, { ...record, status: 'ARCHIVED' }),
  ];

  it("the client's sync passes over them: no removal, the known events applied", async () => {
    const batches: SyncBatch[] = [];
    const result = await sync({
      client: createCatalogClient({ baseUrl: 'http://lods.invalid', apiKey: 'k', fetch: feedOf(events) }),
      state: { cursor: 'a' },
      apply: async (batch) => void batches.push(batch),
    });
    expect(batches.flatMap((b) => b.changes.map((c) => c.op))).to.deep.equal(['upsert', 'remove']);
    expect(result).to.deep.include({ mode: 'incremental', events: 2, upserts: 1, removals: 1, state: { cursor: 'b' } });
  });

  it("the kit's feed repair hands over the known ones and counts the others as ignored", async () => {
    const handled: WebhookEvent[] = [];
    const result = await repairFromFeed({
      baseUrl: 'http://lods.invalid',
      apiKey: 'k',
      after: 'a',
      handle: (e) => void handled.push(e),
      fetch: feedOf(events),
    });
    expect(handled.map((e) => e.type)).to.deep.equal(['LEARNING_OPPORTUNITY_UPDATED', 'LEARNING_OPPORTUNITY_ARCHIVED']);
    expect(result).to.deep.include({ handled: 2, ignored: 1, cursor: 'b' });
  });
});
