// Replaying dead letters ends with the receiver holding each record's newest version. Every version
// of a record dead-lettered left its lane idle with `queued_version` at the newest; a replay that
// made an older one the head then read that newest version as pending, and skipped it (superseded,
// out of the dead letters, never sent): the receiver kept the older version for good. Found from
// outside: `replay-dead` in batches of 500 left 94 of 100 records one version behind, and the
// console's one-letter "Replay" of v1 then v3 sent v1 only. A resync read the same version as pending.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { resyncReceiver } from '../../src/webhooks/catch-up/resync.ts';
import { replayDeadLetters } from '../../src/webhooks/delivery/redeliver.ts';
import { countDeadLetters } from '../../src/webhooks/queue/dead-letters.ts';
import { testDb } from '../hooks.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { type ReceivedRequest, startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, pendingDeliveries, startWebhookStack, type WebhookStack } from '../support/webhooks.ts';

type Body = { id: string; resource: { id: string; version: number } };
const bodyOf = (r: ReceivedRequest) => JSON.parse(r.body.toString()) as Body;

describe('dead letters replayed, every version of a record among them', function () {
  this.timeout(60_000);
  let stack: WebhookStack;
  let receiver: TestReceiver;
  let receiverId: string;
  beforeEach(async () => {
    await testDb().pool.query('delete from receiver');
    stack = await startWebhookStack({ config: { maxAttempts: 1 } });
    receiver = await startReceiver();
    receiverId = (await stack.addReceiver(receiver.url)).id;
  });
  afterEach(async () => {
    await stack.stop();
    await receiver.close();
  });

  /**
   * Records published and changed `updates` times each, every delivery dead: their event ids by
   * version, oldest first, and how many requests the receiver had got when it began answering 200.
   */
  async function deadRecords(count: number, updates: number): Promise<{ events: Map<string, string[]>; from: number }> {
    receiver.reply({ status: 500 });
    const inputs = Array.from({ length: count }, () => buildLearningOpportunityInput({ id: randomUUID() }));
    for (const input of inputs) {
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await stack.api.writes.publish(input.id);
    }
    // Version by version, so that a replay's batches (oldest first) end inside each record's versions.
    for (let i = 0; i < updates; i++)
      for (const input of inputs)
        await stack.api.writes.upsert(parseLearningOpportunityInput({ ...input, title: `Version ${i}` }));
    const events = new Map<string, string[]>();
    const { rows } = await testDb().pool.query<{ resource_id: string; id: string }>(
      'select resource_id, id from event where resource_id = any($1) order by version',
      [inputs.map((i) => i.id)],
    );
    for (const row of rows) events.set(row.resource_id, [...(events.get(row.resource_id) ?? []), row.id]);
    const total = rows.length;
    await eventually(async () => (await countDeadLetters(testDb().pool, receiverId)) === total, 30_000, 'all dead');
    receiver.reply({ status: 200 });
    return { events, from: receiver.requests.length };
  }

  /** The newest version the receiver accepted of each record (the requests from `from` on). */
  const newestSent = (from: number) => {
    const newest = new Map<string, number>();
    for (const body of receiver.requests.slice(from).map(bodyOf))
      newest.set(body.resource.id, Math.max(newest.get(body.resource.id) ?? 0, body.resource.version));
    return newest;
  };
  const newestInCatalog = async (ids: string[]) =>
    new Map(
      (
        await testDb().pool.query<{ resource_id: string; version: number }>(
          'select resource_id, max(version)::int as version from event where resource_id = any($1) group by resource_id',
          [ids],
        )
      ).rows.map((r) => [r.resource_id, r.version]),
    );

  it('in batches that split each record’s versions: every record ends at its newest version', async () => {
    const { events, from } = await deadRecords(6, 3); // 4 events a record, 24 letters
    const ids = [...events.keys()];
    const result = await replayDeadLetters({ pool: testDb().pool, boss: stack.boss }, { receiverId, batchSize: 20 });
    expect(result.remaining).to.equal(0);
    await eventually(async () => (await pendingDeliveries(receiverId)).length === 0, 20_000, 'the replays delivered');
    expect(newestSent(from)).to.deep.equal(await newestInCatalog(ids));
  });

  it('one letter at a time, the newest while an older one is on its way: the newest is sent too', async () => {
    const { events, from } = await deadRecords(1, 2); // v1, v2, v3
    const [recordId, [v1, , v3]] = [...events.entries()][0]!;
    receiver.reply({ status: 200, delayMs: 1500 }); // v1 on its way while v3 is replayed
    const replay = (eventId: string) =>
      replayDeadLetters({ pool: testDb().pool, boss: stack.boss }, { receiverId, eventId });
    expect(await replay(v1!)).to.include({ replayed: 1, superseded: 0 });
    await receiver.waitFor(from + 1, 5000);
    expect(await replay(v3!)).to.include({ replayed: 1, superseded: 0 });
    await eventually(async () => (await pendingDeliveries(receiverId)).length === 0, 20_000, 'both delivered');
    expect(newestSent(from).get(recordId)).to.equal(3);
  });
  it('a resync while an older version is on its way sends the newest too', async () => {
    const { events, from } = await deadRecords(1, 2); // v1, v2, v3
    const [recordId, [v1]] = [...events.entries()][0]!;
    receiver.reply({ status: 200, delayMs: 1500 });
    await replayDeadLetters({ pool: testDb().pool, boss: stack.boss }, { receiverId, eventId: v1! });
    await receiver.waitFor(from + 1, 5000);
    await resyncReceiver({ pool: testDb().pool }, receiverId);
    await eventually(async () => (await pendingDeliveries(receiverId)).length === 0, 20_000, 'all delivered');
    expect(newestSent(from).get(recordId)).to.equal(3);
  });
});
