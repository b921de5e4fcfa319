// Redelivery and replay send the same event (id and body) again, with a fresh timestamp and signature.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { DEAD_LETTER_QUEUE } from '../../src/webhooks/queue/boss.ts';
import { listDeadLetters, redeliverEvent, replayDeadLetters } from '../../src/webhooks/delivery/redeliver.ts';
import { addReceiver, disableReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, jobs, testSecrets, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

const SECRET = 'redelivery-secret-0123456789';

describe('webhook redelivery and dead-letter replay', () => {
  const stack = useWebhookStack({ config: { maxAttempts: 2, backoffBaseMs: 20, backoffMaxMs: 40 } });
  const receivers: TestReceiver[] = [];
  const newReceiver = async () => {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  };
  after(async () => {
    for (const r of receivers) await r.close();
  });

  async function publishOne(): Promise<{ id: string; body: string }> {
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    const { rows } = await testDb().pool.query<{ id: string; body: string }>(
      'select id, body from event where resource_id = $1',
      [input.id],
    );
    return rows[0]!;
  }

  it('redelivers an event to every enabled subscribed receiver by default, or to the one named', async () => {
    const [a, b, off, other] = [await newReceiver(), await newReceiver(), await newReceiver(), await newReceiver()];
    const ra = await stack.addReceiver(a.url, { secret: SECRET });
    const rb = await stack.addReceiver(b.url);
    const roff = await stack.addReceiver(off.url);
    await stack.addReceiver(other.url, { types: ['LEARNING_OPPORTUNITY_DELETED'] });
    const event = await publishOne();
    await a.waitFor(1);
    await b.waitFor(1);
    await off.waitFor(1);
    await disableReceiver({ pool: testDb().pool }, roff.id);

    const all = await redeliverEvent({ pool: testDb().pool, boss: stack.boss }, event.id);
    expect(all.receiverIds.toSorted()).to.deep.equal([ra.id, rb.id].toSorted());
    const [, again] = await a.waitFor(2);
    await b.waitFor(2);
    expect(again!.headers['x-service-event-id']).to.equal(event.id);
    expect(again!.body.toString()).to.equal(event.body);
    expect(again!.headers['x-service-timestamp']).to.not.equal(a.requests[0]!.headers['x-service-timestamp']);
    expect(again!.headers['x-service-signature']).to.not.equal(a.requests[0]!.headers['x-service-signature']);

    const one = await redeliverEvent({ pool: testDb().pool, boss: stack.boss }, event.id, rb.id);
    expect(one.receiverIds).to.deep.equal([rb.id]);
    await b.waitFor(3);
    await new Promise((r) => setTimeout(r, 200));
    expect([a.requests.length, b.requests.length, off.requests.length, other.requests.length]).to.deep.equal([
      2, 3, 1, 0,
    ]);
  });

  it('counts as queued a redelivery that replaces an older waiting one (LATEST_STATE), not as skipped', async () => {
    const r = await newReceiver();
    r.reply({ hang: true }); // the first delivery stays in flight: the later ones wait in the lane
    const deps = { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true };
    const { id: receiverId } = await addReceiver(deps, { url: r.url, mode: 'latest-state' });
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    await r.waitFor(1);
    for (const title of ['Second', 'Third'])
      await stack.api.writes.upsert(parseLearningOpportunityInput({ ...input, title }));
    const { rows } = await testDb().pool.query<{ id: string }>(
      `select id from event where resource_id = $1 order by position`,
      [input.id],
    );
    // The second version again, in place of the third waiting: asked for, so queued.
    const again = await redeliverEvent({ pool: testDb().pool, boss: stack.boss }, rows[1]!.id, receiverId, {
      includeSuperseded: true,
    });
    expect(again).to.deep.include({ receiverIds: [receiverId], superseded: 0, supersededReceiverIds: [] });
    r.releaseHung();
    r.reply({ status: 200 });
  });

  it('refuses an unknown event or receiver, and a disabled receiver', async () => {
    const receiver = await newReceiver();
    const info = await stack.addReceiver(receiver.url);
    await disableReceiver({ pool: testDb().pool }, info.id);
    const event = await publishOne();
    const deps = { pool: testDb().pool, boss: stack.boss };
    const codeOf = (p: Promise<unknown>) =>
      p.then(
        () => 'resolved',
        (e: { code?: string }) => e.code,
      );
    expect(await codeOf(redeliverEvent(deps, '00000000-0000-4000-8000-000000000000'))).to.equal('NOT_FOUND');
    expect(await codeOf(redeliverEvent(deps, event.id, '00000000-0000-4000-8000-000000000000'))).to.equal('NOT_FOUND');
    expect(await codeOf(redeliverEvent(deps, event.id, info.id))).to.equal('INVALID_STATE_TRANSITION');
  });

  it('replays exhausted dead letters with their event ids, and they are gone from the dead letters', async () => {
    const receiver = await newReceiver();
    receiver.reply({ status: 500 });
    const info = await stack.addReceiver(receiver.url, { types: ['LEARNING_OPPORTUNITY_PUBLISHED'] });
    const events = [await publishOne(), await publishOne()];
    const dead = await eventually(
      async () => {
        const d = await listDeadLetters(testDb().pool, { receiverId: info.id });
        return d.length === 2 ? d : null;
      },
      20_000,
      'two dead letters',
    );
    expect(dead.map((d) => d.eventId).toSorted()).to.deep.equal(events.map((e) => e.id).toSorted());
    expect(dead[0]).to.include({
      receiverId: info.id,
      attempts: 2,
      lastStatusCode: 500,
      lastError: 'HTTP 500',
      eventType: 'LEARNING_OPPORTUNITY_PUBLISHED',
      receiverUrl: receiver.url,
    });
    expect(receiver.requests).to.have.length(4);

    receiver.reply({ status: 200 });
    const progress: number[] = [];
    const result = await replayDeadLetters(
      { pool: testDb().pool, boss: stack.boss },
      { receiverId: info.id, batchSize: 1, onProgress: (n) => progress.push(n) },
    );
    expect(result).to.deep.equal({ replayed: 2, superseded: 0, remaining: 0 });
    expect(progress).to.deep.equal([1, 2]);
    const replayed = (await receiver.waitFor(6)).slice(4);
    expect(replayed.map((r) => r.headers['x-service-event-id']).toSorted()).to.deep.equal(
      events.map((e) => e.id).toSorted(),
    );
    expect(replayed.map((r) => r.body.toString()).toSorted()).to.deep.equal(events.map((e) => e.body).toSorted());
    expect(await jobs(DEAD_LETTER_QUEUE, { receiverId: info.id })).to.deep.equal([]);
  });

  it("lists each dead letter with its own last attempt, not a later delivery's of the same event", async () => {
    const receiver = await newReceiver();
    receiver.reply({ status: 503 });
    const info = await stack.addReceiver(receiver.url, { types: ['LEARNING_OPPORTUNITY_PUBLISHED'] });
    const event = await publishOne();
    const [dead] = await eventually(
      async () => {
        const d = await listDeadLetters(testDb().pool, { receiverId: info.id });
        return d.length === 1 ? d : null;
      },
      20_000,
      'a dead letter',
    );
    // The same event sent again to the same receiver, successfully, after the letter died.
    receiver.reply({ status: 200 });
    await redeliverEvent({ pool: testDb().pool, boss: stack.boss }, event.id, info.id);
    await receiver.waitFor(3);
    await eventually(
      async () =>
        (
          await testDb().pool.query('select 1 from delivery_attempt where receiver_id = $1 and status_code = 200', [
            info.id,
          ])
        ).rowCount === 1,
      20_000,
      'the success recorded',
    );
    const [listed] = await listDeadLetters(testDb().pool, { receiverId: info.id });
    expect(listed).to.deep.equal(dead);
    expect(listed).to.include({ attempts: 2, lastStatusCode: 503, lastError: 'HTTP 503' });
    expect(Date.parse(listed!.lastAttemptAt!)).to.be.at.most(Date.parse(listed!.deadSince));
  });
});
