// The change, its event and its delivery jobs commit together or not at all.
import { expect } from 'chai';
import { createCatalogWrites } from '../../src/catalog/catalog-writes.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { createChangeRecorder, type ChangeRecorder } from '../../src/events/record-change.ts';
import { eventsEmitted } from '../../src/kernel/metrics.ts';
import { createFanOut } from '../../src/webhooks/delivery/fan-out.ts';
import { DELIVERY_QUEUE } from '../../src/webhooks/queue/boss.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { jobs, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

describe('webhook fan-out and the mutation transaction', () => {
  const stack = useWebhookStack();
  let receiver: TestReceiver;
  before(async () => {
    receiver = await startReceiver();
    await stack.addReceiver(receiver.url);
  });
  after(async () => {
    await receiver.close();
  });

  const published = async () =>
    (await eventsEmitted.get()).values.find((v) => v.labels.type === 'LEARNING_OPPORTUNITY_PUBLISHED')?.value ?? 0;

  it('a mutation that fails after its event and jobs were written leaves no event, no job and sends nothing', async () => {
    const db = testDb();
    const recordChange = createChangeRecorder(createFanOut({ boss: stack.boss, orm: db.orm }));
    // Fails the transaction after the event is stored and its jobs are inserted.
    const failing: ChangeRecorder = async (em, changes) => {
      const events = await recordChange(em, changes);
      for (const event of events) {
        const inTransaction = await jobs(DELIVERY_QUEUE, { eventId: event.id });
        expect(inTransaction, 'not visible outside the transaction').to.deep.equal([]);
        throw new Error('the mutation fails after fan-out');
      }
      return events;
    };
    const writes = createCatalogWrites({ orm: db.orm, recordChange: failing });
    const countBefore = await published();
    const input = buildLearningOpportunityInput();
    await writes.upsert(parseLearningOpportunityInput(input));
    let failure: unknown;
    await writes.publish(input.id).catch((error: unknown) => (failure = error));
    expect((failure as Error).message).to.equal('the mutation fails after fan-out');

    expect(
      (await db.pool.query('select status from learning_opportunity where id = $1', [input.id])).rows,
    ).to.deep.equal([{ status: 'DRAFT' }]);
    expect((await db.pool.query('select 1 from event where resource_id = $1', [input.id])).rowCount).to.equal(0);
    expect(await jobs(DELIVERY_QUEUE)).to.deep.equal([]);
    expect(await published(), 'eventsEmitted counts committed events only').to.equal(countBefore);

    // The same publication through the real path is delivered, and it is the only delivery.
    await stack.api.writes.publish(input.id);
    await receiver.waitFor(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.requests).to.have.length(1);
    expect(await published()).to.equal(countBefore + 1);
  });
});
