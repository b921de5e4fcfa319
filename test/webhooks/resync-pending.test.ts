// A resync's `pending` counts a record whose event is a dead letter, until it is delivered: a dead
// letter of an event that was delivered since (a disable set it aside, then the catch-up sent it)
// kept the resync pending for good, and an operator waiting for 0 waited forever. A view change's
// deliveries (restated under fresh ids) are pending until delivered too: they read 0 at once.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { resyncReceiver } from '../../src/webhooks/catch-up/resync.ts';
import { replayDeadLetters } from '../../src/webhooks/delivery/redeliver.ts';
import { countDeadLetters } from '../../src/webhooks/queue/dead-letters.ts';
import { getReceiver, updateReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { disableReceiver, enableReceiver } from '../../src/webhooks/receivers/receiver-switch.ts';
import { testDb } from '../hooks.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver } from '../support/receiver.ts';
import { eventually, insertDeadLetter, pendingDeliveries, testSecrets, useWebhookStack } from '../support/webhooks.ts';

describe('a resync’s pending records and dead letters', function () {
  this.timeout(60_000);
  const stack = useWebhookStack();

  /** A receiver that got one record published for it: its id, the record's, and the record ids it is sent from `from` on. */
  async function receiverWithRecord(receiver: Awaited<ReturnType<typeof startReceiver>>) {
    const { id } = await stack.addReceiver(receiver.url);
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    await eventually(async () => (await pendingDeliveries(id)).length === 0, 10_000, 'the record delivered');
    const sentFrom = (from: number) =>
      receiver.requests
        .slice(from)
        .map((r) => (JSON.parse(r.body.toString()) as { resource: { id: string } }).resource.id);
    return { id, recordId: input.id, sentFrom };
  }
  const pendingOf = async (id: string) => (await getReceiver({ pool: testDb().pool }, id))!.resync!.pending;

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

  it('keeps a resync’s dead letter pending, and replays it, though the receiver had that version before', async () => {
    // The receiver lost its copy: what it got before the resync says nothing of what it holds now.
    // Before, the lane's delivered version (from before) made the resync read done, and the replay
    // skip the dead letter as superseded: the record was lost to the receiver for good.
    const receiver = await startReceiver();
    try {
      const { id, recordId, sentFrom } = await receiverWithRecord(receiver);
      receiver.reply({ status: 500 });
      const pool = testDb().pool;
      // Every published record of the test database (this one among them), every delivery failing.
      const { found } = (await resyncReceiver({ pool }, id)).run;
      await eventually(
        async () => (await countDeadLetters(pool, id)) === found,
        20_000,
        'the resync’s deliveries dead',
      );
      expect(await pendingOf(id), 'the dead letters are pending').to.equal(found);

      receiver.reply({ status: 200 });
      const sent = receiver.requests.length;
      expect(await replayDeadLetters({ pool, boss: stack.boss }, { receiverId: id })).to.deep.include({
        replayed: found,
      });
      await eventually(async () => (await pendingOf(id)) === 0, 10_000, 'the replay delivered');
      expect(sentFrom(sent)).to.include(recordId);
    } finally {
      await receiver.close();
    }
  });

  it('sends a resync’s dead letters in the catch-up of the next enable (a 410 disabled the receiver)', async () => {
    const receiver = await startReceiver();
    try {
      const pool = testDb().pool;
      const { id, recordId, sentFrom } = await receiverWithRecord(receiver);
      receiver.reply({ status: 410 });
      const { found } = (await resyncReceiver({ pool }, id)).run;
      await eventually(async () => !(await getReceiver({ pool }, id))!.enabled, 10_000, 'disabled by the 410');
      await eventually(async () => (await pendingDeliveries(id)).length === 0, 10_000, 'the deliveries set aside');
      expect(await pendingOf(id)).to.equal(found);

      receiver.reply({ status: 200 });
      const sent = receiver.requests.length;
      await enableReceiver({ pool }, id);
      await eventually(async () => (await pendingOf(id)) === 0, 20_000, 'the catch-up delivered');
      expect(sentFrom(sent)).to.include(recordId);
    } finally {
      await receiver.close();
    }
  });

  it('leaves a finished catch-up finished while a resync sends its records again', async () => {
    // The resync's lanes forget what they delivered, so the catch-up's records read as undelivered:
    // a catch-up done long before showed them pending (and an alert on the gauge fired) for as long
    // as the resync ran, or the receiver stayed disabled after it.
    const receiver = await startReceiver();
    try {
      const pool = testDb().pool;
      const { id, recordId } = await receiverWithRecord(receiver);
      await disableReceiver({ pool }, id);
      const input = buildLearningOpportunityInput({ id: recordId, title: 'Changed while disabled' });
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await enableReceiver({ pool }, id);
      const catchUp = async () => (await getReceiver({ pool }, id))!.catchUp!;
      await eventually(async () => (await catchUp()).pending === 0, 10_000, 'the catch-up delivered');
      expect((await catchUp()).total).to.equal(1);

      receiver.reply({ status: 500 });
      const { found } = (await resyncReceiver({ pool }, id)).run;
      await eventually(
        async () => (await countDeadLetters(pool, id)) === found,
        20_000,
        'the resync’s deliveries dead',
      );
      expect(await pendingOf(id), 'the resync is pending').to.equal(found);
      expect((await catchUp()).pending, 'the catch-up stays done').to.equal(0);
    } finally {
      await receiver.close();
    }
  });

  it('counts a view change’s deliveries as pending until they are delivered', async () => {
    const receiver = await startReceiver();
    try {
      const deps = { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true };
      const { id } = await stack.addReceiver(receiver.url);
      await updateReceiver(deps, id, { view: 'format=ONLINE' });
      for (const format of ['IN_PERSON', 'IN_PERSON', 'ONLINE']) {
        const input = buildLearningOpportunityInput({ format });
        await stack.api.writes.upsert(parseLearningOpportunityInput(input));
        await stack.api.writes.publish(input.id);
      }
      await eventually(async () => (await pendingDeliveries(id)).length === 0, 10_000, 'the ONLINE record delivered');
      const resync = async () => (await getReceiver({ pool: testDb().pool }, id))!.resync!;

      // The records in person come in (and the online ones leave): held at the receiver, all on their way.
      receiver.reply({ hang: true });
      await updateReceiver(deps, id, { view: 'format=IN_PERSON' });
      await eventually(async () => (await resync()).queued === (await resync()).total, 10_000, 'the change queued');
      const underway = await resync();
      expect(underway.total).to.be.at.least(3);
      expect(underway.pending, 'every delivery of the change is on its way').to.equal(underway.total);

      receiver.reply({ status: 200 });
      receiver.releaseHung();
      await eventually(async () => (await resync()).pending === 0, 20_000, 'the change delivered');
    } finally {
      await receiver.close();
    }
  });
});
