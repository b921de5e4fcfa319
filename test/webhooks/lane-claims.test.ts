// The deliveries a settlement claims for its worker (queue/settle-jobs.ts, delivery/load-batch.ts):
// the settling statement hands them over with their events and receivers, so a lane moves on
// without a load round trip. An event committed while that statement waited for its lane's lock is
// in the lane (the lock re-reads the row) but not in the statement's snapshot: it must still be
// sent, not dropped as "event missing".
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { verifyDelivery } from '@lods/receiver-kit';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { createChangeRecorder } from '../../src/events/record-change.ts';
import { createFanOut } from '../../src/webhooks/delivery/fan-out.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { type ReceivedRequest } from '../support/receiver.ts';
import { eventually, startWebhookStack, webhookTestWorld } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

type Body = { resource: { id: string; version: number }; data: { title: string } | null };
const bodyOf = (r: ReceivedRequest) => JSON.parse(r.body.toString()) as Body;
const of = (requests: ReceivedRequest[], resourceId: string) =>
  requests.map(bodyOf).filter((b) => b.resource.id === resourceId);

describe("a lane's next delivery, claimed by the settlement of the one before it", function () {
  this.timeout(60_000);
  const world = webhookTestWorld();

  it('is sent with its own body, signed, in order, for every version of a record changed many times', async () => {
    world.stack = await startWebhookStack();
    const secret = 'lane-claims-secret-0123456789abcdef';
    await world.stack.addReceiver(world.receiver.url, { secret });
    const id = randomUUID();
    const input = buildLearningOpportunityInput({ id });
    await world.stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await world.stack.api.writes.publish(id);
    for (let i = 1; i <= 12; i++)
      await world.stack.api.writes.upsert(parseLearningOpportunityInput({ ...input, title: `Version ${i}` }));
    await eventually(async () => of(world.receiver.requests, id).length === 13, 15_000, 'thirteen deliveries');
    const bodies = of(world.receiver.requests, id);
    expect(bodies.map((b) => b.resource.version)).to.deep.equal([...Array(13).keys()].map((i) => i + 1));
    expect(bodies.slice(1).map((b) => b.data?.title)).to.deep.equal(
      [...Array(12).keys()].map((i) => `Version ${i + 1}`),
    );
    // Signed with the receiver's secret and carrying the version header, as a fetched delivery is.
    for (const r of world.receiver.requests.filter((r) => bodyOf(r).resource.id === id)) {
      expect(r.headers['x-service-resource-version']).to.equal(String(bodyOf(r).resource.version));
      expect(verifyDelivery({ rawBody: r.body, headers: r.headers, secret }).ok, 'signature').to.equal(true);
    }
  });

  it('sends an event committed while the settlement waited for its lane, instead of dropping it', async () => {
    world.stack = await startWebhookStack();
    await world.stack.addReceiver(world.receiver.url);
    const id = randomUUID();
    const input = buildLearningOpportunityInput({ id });
    // Version 1 is answered once version 2 is written (in flight meanwhile, however slow the machine).
    world.receiver.reply((r) => (bodyOf(r).resource.version === 1 ? { hang: true } : { status: 200 }));
    await world.stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await world.stack.api.writes.publish(id);
    await eventually(async () => of(world.receiver.requests, id).length === 1, 5000, 'version 1 in flight');
    const { rows } = await testDb().pool.query<{ doc: string }>('select doc from learning_opportunity where id = $1', [
      id,
    ]);
    const doc = rows[0]!.doc;
    const record = createChangeRecorder(createFanOut({ boss: world.stack.boss, orm: testDb().orm }));
    // Version 2's transaction holds the lane's row (its enqueue appended to the lane) until version
    // 1's settling statement waits for that row; then it commits. The statement's snapshot predates
    // the commit: it sees version 2 in the lane, but not its event row.
    await testDb()
      .orm.em.fork()
      .transactional(async (em) => {
        await record(em, [
          {
            resourceId: id,
            before: { status: 'PUBLISHED', doc },
            after: { status: 'PUBLISHED', doc: doc.replace('"title":"', '"title":"Later ') },
            at: new Date(),
          },
        ]);
        world.receiver.releaseHung();
        await eventually(
          async () =>
            (
              await testDb().pool.query(
                `select 1 from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`,
              )
            ).rowCount! > 0,
          5000,
          "version 1's settlement waiting for the lane",
        );
      });
    await eventually(async () => of(world.receiver.requests, id).length === 2, 5000, 'version 2');
    expect(of(world.receiver.requests, id).map((b) => b.resource.version)).to.deep.equal([1, 2]);
    // Its attempt is recorded once its settlement commits, a moment after the receipt.
    const outcomes = async () =>
      (
        await testDb().pool.query<{ outcome: string }>(
          `select a.outcome from delivery_attempt a join event e on e.id = a.event_id where e.resource_id = $1 and e.version = 2`,
          [id],
        )
      ).rows.map((a) => a.outcome);
    await eventually(async () => (await outcomes()).length > 0, 5000, "version 2's attempt recorded");
    expect(await outcomes()).to.deep.equal(['success']);
  });
});
