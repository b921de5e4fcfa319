// Jobs enqueued the pre-lanes way after the lanes migration (a process of the old version still
// writing during a rolling upgrade, or an old worker's retry): the new worker puts them into their
// lanes before sending (queue/lane-adoption.ts), so they are delivered, in version order, one at a
// time per record, and later events of the record queued by the new code do not overtake them.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { startDeliveryWorker } from '../../src/webhooks/delivery/worker.ts';
import { BOSS_SCHEMA, DELIVERY_QUEUE, enqueueDeliveries } from '../../src/webhooks/queue/boss.ts';
import { silentLogger } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { type ReceivedRequest } from '../support/receiver.ts';
import { eventually, startWebhookStack, testSecrets, webhookTestWorld } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

type Body = { type: string; resource: { id: string; version: number } };
const bodyOf = (r: ReceivedRequest) => JSON.parse(r.body.toString()) as Body;
const of = (requests: ReceivedRequest[], id: string) => requests.filter((r) => bodyOf(r).resource.id === id);

describe('jobs queued without a lane during an upgrade', function () {
  this.timeout(60_000);
  const world = webhookTestWorld();

  it('are delivered in version order, one at a time, before the events queued after them', async () => {
    world.stack = await startWebhookStack({ worker: false });
    const { id: receiverId } = await world.stack.addReceiver(world.receiver.url);
    const [a, b] = [randomUUID(), randomUUID()];
    const db = testDb();
    for (const id of [a, b]) {
      const input = buildLearningOpportunityInput({ id });
      await world.stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await world.stack.api.writes.publish(id);
      for (let i = 0; i < 2; i++)
        await world.stack.api.writes.upsert(parseLearningOpportunityInput({ ...input, title: `Version ${i}` }));
    }
    // Queued the old way (a job each, no lane), newest first: versions 1-3 of record a, which has no
    // lane; versions 2 and 3 of record b, whose lane holds version 1 (queued by the new code).
    await db.pool.query(`delete from ${BOSS_SCHEMA}.job where name = $1`, [DELIVERY_QUEUE]);
    await db.pool.query('delete from delivery_lane where resource_id = $1', [a]);
    await db.pool.query(`update delivery_lane set waiting = '{}' where resource_id = $1`, [b]);
    const { rows: events } = await db.pool.query<{ id: string; resource_id: string; version: string }>(
      'select id, resource_id, version from event where resource_id = any($1::uuid[]) order by version desc',
      [[a, b]],
    );
    const old = events.filter((e) => e.resource_id === a || e.version !== '1');
    await enqueueDeliveries(
      world.stack.boss,
      world.stack.boss.getDb(),
      old.map((e) => ({ eventId: e.id, receiverId, attempt: 1 })),
    );
    const { rows: laneB } = await db.pool.query<{ head_event: string }>(
      'select head_event from delivery_lane where resource_id = $1',
      [b],
    );
    // Record b's head, version 1: its job again.
    await db.pool.query(
      `insert into ${BOSS_SCHEMA}.job (id, name, data, group_id) select l.head_job, $1, jsonb_build_object('eventId', l.head_event, 'receiverId', l.receiver_id, 'attempt', 1), l.receiver_id::text
         from delivery_lane l where l.resource_id = $2`,
      [DELIVERY_QUEUE, b],
    );
    expect(laneB).to.have.length(1);
    // Then version 4 of each, by the new code.
    for (const id of [a, b])
      await world.stack.api.writes.upsert(
        parseLearningOpportunityInput({ ...buildLearningOpportunityInput({ id }), title: 'Version 4' }),
      );
    world.receiver.reply({ status: 200, delayMs: 40 });
    const worker = await startDeliveryWorker({
      boss: world.stack.boss,
      pool: db.pool,
      config: world.stack.config,
      logger: silentLogger,
      secrets: testSecrets,
    });
    try {
      await eventually(
        async () => of(world.receiver.requests, a).length >= 4 && of(world.receiver.requests, b).length >= 4,
        20_000,
        'four deliveries of each record',
      );
      await new Promise((resolve) => setTimeout(resolve, 300)); // anything more would arrive by now
      for (const id of [a, b]) {
        const requests = of(world.receiver.requests, id);
        expect(
          requests.map((r) => bodyOf(r).resource.version),
          `record ${id}`,
        ).to.deep.equal([1, 2, 3, 4]);
        // One at a time: each answered (40 ms) and settled before the next one left.
        for (let i = 1; i < requests.length; i++)
          expect(requests[i]!.arrivedAt - requests[i - 1]!.arrivedAt, `record ${id}, delivery ${i + 1}`).to.be.at.least(
            35,
          );
      }
    } finally {
      await worker.stop();
    }
  });

  it('leaves test events alone: they have no record and no lane', async () => {
    world.stack = await startWebhookStack();
    const { id: receiverId } = await world.stack.addReceiver(world.receiver.url);
    const { sendTestEvent } = await import('../../src/webhooks/delivery/test-event.ts');
    const sent = await sendTestEvent({ pool: testDb().pool, boss: world.stack.boss }, receiverId);
    await eventually(async () => world.receiver.requests.length === 1, 5000, 'the test event');
    expect(bodyOf(world.receiver.requests[0]!).type).to.equal('WEBHOOK_TEST');
    expect(world.receiver.requests[0]!.headers['x-service-event-id']).to.equal(sent.eventId);
    const { rows } = await testDb().pool.query('select 1 from delivery_lane where receiver_id = $1', [receiverId]);
    expect(rows).to.have.length(0);
  });
});
