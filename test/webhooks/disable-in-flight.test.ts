// An operator disables a receiver while one of its deliveries is in flight, and the receiver then
// fails it: the retry is a dead letter (as the disable's other waiting deliveries are), not a job
// left in the queue beside the record's stopped lane. Left there, it was sent after the newer
// deliveries of the enable's catch-up: the receiver got an old version last.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { listDeadLetters } from '../../src/webhooks/delivery/redeliver.ts';
import { addReceiver, disableReceiver, enableReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { testDb } from '../hooks.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver } from '../support/receiver.ts';
import { eventually, pendingDeliveries, testSecrets, useWebhookStack } from '../support/webhooks.ts';

type Delivered = { resource: { id: string; version: number } };

describe('a receiver disabled while a delivery is in flight', function () {
  this.timeout(60_000);
  const stack = useWebhookStack({ config: { timeoutMs: 10_000, backoffBaseMs: 4000, backoffMaxMs: 4000 } });

  it('dead-letters the failed attempt’s retry, and after enable the receiver ends on the newest version', async () => {
    const deps = { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true };
    const receiver = await startReceiver();
    try {
      const { id } = await addReceiver(deps, { url: receiver.url });
      receiver.reply({ status: 500, delayMs: 1500 }); // in flight for 1.5 s, then a failure
      const input = buildLearningOpportunityInput();
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await stack.api.writes.publish(input.id);
      await eventually(async () => receiver.requests.length === 1, 10_000, 'the delivery in flight');

      await disableReceiver(deps, id); // the worker then settles a failure of a disabled receiver
      await eventually(
        async () =>
          (
            await testDb().pool.query('select 1 from delivery_attempt where receiver_id = $1 and status_code = 500', [
              id,
            ])
          ).rowCount === 1,
        10_000,
        'the failed attempt settled',
      );
      // Settled while disabled: the retry (due in 4 s) is a dead letter now, not a job in the queue.
      expect(await pendingDeliveries(id), 'no delivery job left for the disabled receiver').to.deep.equal([]);
      expect(await listDeadLetters(testDb().pool, { receiverId: id })).to.have.length(1);

      receiver.reply({ status: 200 });
      await stack.api.writes.upsert(parseLearningOpportunityInput({ ...input, title: 'Changed while disabled' }));
      await enableReceiver(deps, id);
      await new Promise((resolve) => setTimeout(resolve, 5000)); // past the retry's backoff
      const versions = receiver.requests
        .slice(1)
        .map((r) => (JSON.parse(r.body.toString()) as Delivered).resource.version);
      expect(versions.at(-1), versions.join(', ')).to.equal(Math.max(...versions));
    } finally {
      await receiver.close();
    }
  });
});
