// The receiver kit applies in order: applyEvent hands an event to the receiver's code only when its
// resource.version is newer than the store's, keeps deleted records (and records that left the
// receiver's view) as tombstones for a while, and serialises two events of one resource handled at
// once; the file store survives a restart.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { applyEvent, FileVersionStore, MemoryVersionStore, shouldApply, type WebhookEvent } from '@lods/receiver-kit';

function event(
  resourceId: string,
  version: number,
  type: WebhookEvent['type'] = 'LEARNING_OPPORTUNITY_UPDATED',
): WebhookEvent {
  const occurredAt = new Date().toISOString();
  const resource = { type: 'LEARNING_OPPORTUNITY' as const, id: resourceId, version };
  return type === 'LEARNING_OPPORTUNITY_DELETED' || type === 'LEARNING_OPPORTUNITY_LEFT_VIEW'
    ? { id: randomUUID(), type, occurredAt, resource, data: null }
    : {
        id: randomUUID(),
        type,
        occurredAt,
        resource,
        data: { id: resourceId, updatedAt: occurredAt, title: `v${version}` },
      };
}

describe('receiver kit: version store and applyEvent', () => {
  it('applies only newer versions: an old retry, a replay of the same version and a late one after a delete are dropped', async () => {
    const store = new MemoryVersionStore();
    const id = randomUUID();
    const applied: number[] = [];
    const apply = (e: WebhookEvent) => void applied.push(e.resource.version);
    for (const v of [1, 3, 2, 3]) await applyEvent(store, event(id, v), apply);
    expect(applied).to.deep.equal([1, 3]);
    expect(await applyEvent(store, event(id, 4, 'LEARNING_OPPORTUNITY_DELETED'), apply)).to.deep.equal({
      applied: true,
      result: undefined,
    });
    expect(await applyEvent(store, event(id, 2, 'LEARNING_OPPORTUNITY_PUBLISHED'), apply)).to.deep.equal({
      applied: false,
      lastVersion: 4,
    });
    // A re-created record goes on from where it stopped.
    await applyEvent(store, event(id, 5, 'LEARNING_OPPORTUNITY_PUBLISHED'), apply);
    expect(applied).to.deep.equal([1, 3, 4, 5]);
    expect(await shouldApply(store, event(id, 5))).to.equal(false);
    expect(await shouldApply(store, event(id, 6))).to.equal(true);
  });

  it('LEFT_VIEW is applied like DELETED: a tombstone that drops a late older event, until the record comes back newer', async () => {
    let now = 1_000_000;
    const store = new MemoryVersionStore({ tombstoneTtlMs: 1000, now: () => now });
    const id = randomUUID();
    const applied: string[] = [];
    const apply = (e: WebhookEvent) => void applied.push(`${e.type} v${e.resource.version}`);
    await applyEvent(store, event(id, 2, 'LEARNING_OPPORTUNITY_PUBLISHED'), apply);
    expect((await applyEvent(store, event(id, 3, 'LEARNING_OPPORTUNITY_LEFT_VIEW'), apply)).applied).to.equal(true);
    // A retry of the update before it (still in the view) must not bring the record back into the copy.
    expect(await applyEvent(store, event(id, 2, 'LEARNING_OPPORTUNITY_UPDATED'), apply)).to.deep.equal({
      applied: false,
      lastVersion: 3,
    });
    // Kept as a tombstone (its time of removal), forgotten after its time to live like a deleted record's.
    expect(store.toJSON()[id]).to.deep.equal([3, now]);
    // Back in the view with a newer version: applied, and live again (never forgotten).
    await applyEvent(store, event(id, 5, 'LEARNING_OPPORTUNITY_UPDATED'), apply);
    const gone = randomUUID();
    await applyEvent(store, event(gone, 4, 'LEARNING_OPPORTUNITY_LEFT_VIEW'), apply);
    now += 1001;
    expect(store.lastVersion(id)).to.equal(5);
    expect(store.lastVersion(gone)).to.equal(null);
    expect(applied).to.deep.equal([
      'LEARNING_OPPORTUNITY_PUBLISHED v2',
      'LEARNING_OPPORTUNITY_LEFT_VIEW v3',
      'LEARNING_OPPORTUNITY_UPDATED v5',
      'LEARNING_OPPORTUNITY_LEFT_VIEW v4',
    ]);
  });

  it('forgets a tombstone after its time to live, not before', async () => {
    let now = 1_000_000;
    const store = new MemoryVersionStore({ tombstoneTtlMs: 1000, now: () => now });
    const [deleted, live] = [randomUUID(), randomUUID()];
    store.record(deleted, 7, { deleted: true });
    store.record(live, 3);
    now += 1000;
    expect(store.lastVersion(deleted)).to.equal(7);
    now += 1;
    expect(store.lastVersion(deleted)).to.equal(null);
    expect(store.lastVersion(live), 'a live record is never forgotten').to.equal(3);
  });

  it('checks and applies two events of one resource handled at once in turn (the older one dropped)', async () => {
    const store = new MemoryVersionStore();
    const id = randomUUID();
    const applied: number[] = [];
    const slowApply = async (e: WebhookEvent) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      applied.push(e.resource.version);
    };
    await Promise.all([applyEvent(store, event(id, 2), slowApply), applyEvent(store, event(id, 1), slowApply)]);
    expect(applied).to.deep.equal([2]);
  });

  it('records nothing when applying throws, so the event applies when it comes again', async () => {
    const store = new MemoryVersionStore();
    const id = randomUUID();
    const e = event(id, 1);
    let error: unknown;
    await applyEvent(store, e, () => {
      throw new Error('disk full');
    }).catch((caught: unknown) => (error = caught));
    expect(error).to.be.instanceOf(Error);
    expect(store.lastVersion(id)).to.equal(null);
    expect((await applyEvent(store, e, () => 'ok')).applied).to.equal(true);
  });

  it('FileVersionStore keeps versions and tombstones across a restart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lods-versions-'));
    try {
      const path = join(dir, 'versions.json');
      const [a, b] = [randomUUID(), randomUUID()];
      const first = await new FileVersionStore(path).open();
      await Promise.all([first.record(a, 4), first.record(b, 9, { deleted: true }), first.record(a, 5)]);
      const second = await new FileVersionStore(path).open();
      expect([second.lastVersion(a), second.lastVersion(b)]).to.deep.equal([5, 9]);
      expect(
        (await applyEvent(second, event(b, 8, 'LEARNING_OPPORTUNITY_PUBLISHED'), () => 'resurrected')).applied,
      ).to.equal(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
