// A resync's `pending` counts a record whose event is a dead letter, until it is delivered: a dead
// letter of an event that was delivered since (a disable set it aside, then the catch-up sent it)
// kept the resync pending for good, and an operator waiting for 0 waited forever.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { resyncReceiver } from '../../src/webhooks/catch-up/resync.ts';
import { getReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { testDb } from '../hooks.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver } from '../support/receiver.ts';
import { eventually, insertDeadLetter, pendingDeliveries, useWebhookStack } from '../support/webhooks.ts';

describe('a resync’s pending records and dead letters', function () {
  this.timeout(60_000);
  const stack = useWebhookStack();

  it('counts a dead letter as pending only while its version is not delivered', async () => {
    const receiver = await startReceiver();
    try {
      const { id } = await stack.addReceiver(receiver.url);
      const input = buildLearningOpportunityInput();
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await stack.api.writes.publish(input.id);
      await eventually(async () => receiver.requests.length === 1, 10_000, 'the record delivered');
      const eventId = (JSON.parse(receiver.requests[0]!.body.toString()) as { id: string }).id;
      // Settled (a resync does not send again a version on its way).
      await eventually(async () => (await pendingDeliveries(id)).length === 0, 10_000, 'the delivery settled');

      await resyncReceiver({ pool: testDb().pool }, id);
      await eventually(async () => receiver.requests.length === 2, 10_000, 'the resync delivered');
      const pending = async () => (await getReceiver({ pool: testDb().pool }, id))!.resync!.pending;
      await eventually(async () => (await pending()) === 0, 10_000, 'the resync done');

      // An older dead letter of the same event (a disable set it aside; it was delivered since).
      await insertDeadLetter(stack.boss, { eventId, receiverId: id, attempts: 1, reason: 'receiver_disabled' });
      expect(await pending()).to.equal(0);
    } finally {
      await receiver.close();
    }
  });
});
