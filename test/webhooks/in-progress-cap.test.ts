// One receiver's deliveries in progress are capped (WEBHOOK_GROUP_FACTOR x per-receiver limit), and
// an attempt that is only waiting for its settlement to commit does not count: the receiver gets its
// next delivery while the database is still recording the last one.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

describe('deliveries in progress per receiver', () => {
  // A cap of one delivery in progress for the receiver.
  const stack = useWebhookStack({ config: { concurrencyPerReceiver: 1, groupFactor: 1 } });
  let receiver: TestReceiver;
  before(async () => {
    receiver = await startReceiver();
    await stack.addReceiver(receiver.url);
  });
  after(async () => {
    await receiver.close();
  });

  it('sends the next delivery while the previous attempt is still being recorded', async () => {
    // Attempt rows cannot be written while this lock is held: every settlement waits.
    const blocker = await testDb().pool.connect();
    try {
      await blocker.query('begin');
      await blocker.query('lock table delivery_attempt in share mode');
      for (let i = 0; i < 2; i++) {
        const input = buildLearningOpportunityInput();
        await stack.api.writes.upsert(parseLearningOpportunityInput(input));
        await stack.api.writes.publish(input.id);
      }
      await receiver.waitFor(2, 15_000);
      const { rows } = await testDb().pool.query('select count(*)::int as n from delivery_attempt');
      expect(rows[0].n, 'attempts recorded while the lock was held').to.equal(0);
    } finally {
      await blocker.query('commit');
      blocker.release();
    }
    await eventually(
      async () => (await testDb().pool.query('select count(*)::int as n from delivery_attempt')).rows[0].n === 2,
      5000,
      'both attempts recorded',
    );
    expect(receiver.requests).to.have.length(2);
  });
});
