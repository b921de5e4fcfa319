// An operator disables a receiver while one of its deliveries is in flight, and the receiver then
// fails it: the retry is a dead letter (as the disable's other waiting deliveries are), not a job
// left in the queue beside the record's stopped lane. Left there, it was sent after the newer
// deliveries of the enable's catch-up: the receiver got an old version last.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { listDeadLetters } from '../../src/webhooks/delivery/redeliver.ts';
import { addReceiver, disableReceiver, enableReceiver, getReceiver } from '../../src/webhooks/receivers/receivers.ts';
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

  // Found from outside: `receivers disable` said "0 waiting deliveries set aside" while more than a
  // hundred became dead letters, those waiting behind the deliveries in flight.
  it('counts what becomes a dead letter: the waiting deliveries set aside now, and those behind the ones in flight', async () => {
    const deps = { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true };
    const receiver = await startReceiver();
    try {
      const { id } = await addReceiver(deps, { url: receiver.url });
      receiver.reply({ status: 200, delayMs: 2000 }); // the first deliveries stay in flight a while
      const inputs = Array.from({ length: 3 }, () => buildLearningOpportunityInput());
      for (const input of inputs) {
        await stack.api.writes.upsert(parseLearningOpportunityInput(input));
        await stack.api.writes.publish(input.id);
      }
      await eventually(async () => receiver.requests.length >= 1, 10_000, 'a delivery in flight');
      // Newer versions of each record: they wait behind its delivery in flight, or in the queue.
      for (const [n, input] of inputs.entries())
        for (let v = 0; v < 2; v++)
          await stack.api.writes.upsert(parseLearningOpportunityInput({ ...input, title: `Edit ${n}.${v}` }));
      const disabled = await disableReceiver(deps, id);
      expect(disabled.behindInFlight, 'deliveries waiting behind those in flight').to.be.above(0);
      expect(disabled.inFlight).to.be.above(0);
      await eventually(
        async () => (await pendingDeliveries(id)).length === 0,
        15_000,
        'the deliveries in flight settled',
      );
      const dead = await listDeadLetters(testDb().pool, { receiverId: id });
      expect(dead.length, 'every dead letter counted by the disable').to.equal(
        disabled.setAside + disabled.behindInFlight,
      );

      // The enable's catch-up sends each record's latest event, often a letter's very event: the
      // letters, never attempted, still show no attempt (not the catch-up's 200).
      receiver.reply({ status: 200 });
      const enabled = await enableReceiver(deps, id);
      expect(enabled.catchUp!.total).to.be.above(0);
      await eventually(
        async () => (await getReceiver(deps, id))!.catchUp!.pending === 0,
        15_000,
        'the catch-up delivered',
      );
      const letters = await listDeadLetters(testDb().pool, { receiverId: id });
      expect(letters.filter((l) => l.attempts === 0).length).to.be.above(0);
      for (const letter of letters.filter((l) => l.attempts === 0))
        expect(letter, letter.eventId).to.include({ lastStatusCode: null, lastAttemptAt: null });
    } finally {
      await receiver.close();
    }
  });
});
