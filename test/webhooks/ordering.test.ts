// Order per record, per receiver (docs/contract.md, "Delivery guarantees"; queue/lanes.ts): a delivery is not attempted
// while an earlier delivery of the same record to the same receiver is in flight or waiting for its
// retry; other records are not held up; a dead letter releases the ones behind it; a lost worker's
// expired job stays the head; a head that vanished unsettled is swept on; deliveries queued before
// the upgrade are put in lanes by the migration; LATEST_STATE sends at most one delivery per record
// after an outage; replays never regress a receiver.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { apiKeyEntities } from '../../src/auth/entities.ts';
import { catalogEntities } from '../../src/catalog/entities.ts';
import { migrate } from '../../src/db/orm.ts';
import { redeliverEvent, replayDeadLetters } from '../../src/webhooks/delivery/redeliver.ts';
import { startDeliveryWorker } from '../../src/webhooks/delivery/worker.ts';
import { BOSS_SCHEMA, DELIVERY_QUEUE, enqueueDeliveries, fetchDeliveries } from '../../src/webhooks/queue/boss.ts';
import { updateReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { silentLogger } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { type ReceivedRequest } from '../support/receiver.ts';
import {
  eventually,
  pendingDeliveries,
  startWebhookStack,
  testSecrets,
  webhookTestWorld,
} from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

type Body = { id: string; type: string; resource: { id: string; version: number } };
const bodyOf = (r: ReceivedRequest) => JSON.parse(r.body.toString()) as Body;
const versionsOf = (requests: ReceivedRequest[], resourceId: string) =>
  requests
    .map(bodyOf)
    .filter((b) => b.resource.id === resourceId)
    .map((b) => b.resource.version);

describe('per-record order of deliveries', function () {
  this.timeout(60_000);
  const world = webhookTestWorld();

  /** A published record changed `updates` more times: 1 + updates events. */
  async function changes(resourceId: string, updates: number): Promise<void> {
    const input = buildLearningOpportunityInput({ id: resourceId });
    await world.stack!.api.writes.upsert(parseLearningOpportunityInput(input));
    await world.stack!.api.writes.publish(resourceId);
    for (let i = 0; i < updates; i++)
      await world.stack!.api.writes.upsert(parseLearningOpportunityInput({ ...input, title: `Version ${i}` }));
  }

  it("holds a record's later events while its first one is retried, and sends other records meanwhile", async () => {
    world.stack = await startWebhookStack({ config: { backoffBaseMs: 300, backoffMaxMs: 300, maxAttempts: 6 } });
    await world.stack.addReceiver(world.receiver.url);
    const [slow, other] = [randomUUID(), randomUUID()];
    // The slow record's first delivery fails until released; everything else succeeds.
    let hold = true;
    world.receiver.reply((r) =>
      hold && bodyOf(r).resource.id === slow && bodyOf(r).resource.version === 1 ? { status: 503 } : { status: 200 },
    );
    await changes(slow, 3);
    await changes(other, 3);
    await eventually(
      async () =>
        versionsOf(world.receiver.requests, other).length === 4 &&
        versionsOf(world.receiver.requests, slow).length >= 2,
      10_000,
      "the other record's four deliveries, and a retry",
    );
    // While the slow record's first delivery fails and waits for its retries, none of its later events is sent.
    expect(versionsOf(world.receiver.requests, slow).every((v) => v === 1)).to.equal(true);
    hold = false;
    await eventually(
      async () => versionsOf(world.receiver.requests, slow).at(-1) === 4,
      10_000,
      "the slow record's deliveries",
    );
    expect(versionsOf(world.receiver.requests, slow).filter((v) => v > 1)).to.deep.equal([2, 3, 4]);
    expect(versionsOf(world.receiver.requests, other)).to.deep.equal([1, 2, 3, 4]);
  });

  it('a dead letter releases the deliveries behind it', async () => {
    world.stack = await startWebhookStack({ config: { maxAttempts: 2, backoffBaseMs: 20, backoffMaxMs: 20 } });
    await world.stack.addReceiver(world.receiver.url);
    const id = randomUUID();
    world.receiver.reply((r) => (bodyOf(r).resource.version === 1 ? { status: 500 } : { status: 200 }));
    await changes(id, 2);
    await eventually(
      async () => versionsOf(world.receiver.requests, id).length === 4,
      20_000,
      'two failures of version 1, then versions 2 and 3',
    );
    expect(versionsOf(world.receiver.requests, id)).to.deep.equal([1, 1, 2, 3]);
  });

  it("keeps a lost worker's expired job at the head: later events wait until it comes back", async () => {
    // Expiry 4 s (timeout 1 s: not shorter, or a slow local answer on a loaded machine times out and
    // is sent again); supervised, so the expired claim is handed out again.
    world.stack = await startWebhookStack({
      worker: false,
      supervise: true,
      config: { timeoutMs: 1000, lostRetryLimit: 2 },
    });
    await world.stack.addReceiver(world.receiver.url);
    const id = randomUUID();
    await changes(id, 0);
    const claimed = await fetchDeliveries(world.stack.boss, { batchSize: 10, groupConcurrency: 10, ignoreGroups: [] });
    expect(claimed).to.have.length(1); // claimed, and the worker "dies"
    await world.stack.api.writes.upsert(
      parseLearningOpportunityInput(buildLearningOpportunityInput({ id, title: 'Later' })),
    );
    const worker = await startDeliveryWorker({
      boss: world.stack.boss,
      pool: testDb().pool,
      config: world.stack.config,
      logger: silentLogger,
      secrets: testSecrets,
    });
    try {
      await eventually(async () => versionsOf(world.receiver.requests, id).length === 2, 20_000, 'both deliveries');
      expect(versionsOf(world.receiver.requests, id)).to.deep.equal([1, 2]);
    } finally {
      await worker.stop();
    }
  });

  it('moves a lane on when pg-boss dead-lettered its head (workers kept dying)', async () => {
    world.stack = await startWebhookStack({
      worker: false,
      supervise: true,
      config: { timeoutMs: 1000, lostRetryLimit: 0 },
    });
    await world.stack.addReceiver(world.receiver.url);
    const id = randomUUID();
    await changes(id, 0);
    expect(
      await fetchDeliveries(world.stack.boss, { batchSize: 10, groupConcurrency: 10, ignoreGroups: [] }),
    ).to.have.length(1);
    await world.stack.api.writes.upsert(
      parseLearningOpportunityInput(buildLearningOpportunityInput({ id, title: 'Later' })),
    );
    const worker = await startDeliveryWorker({
      boss: world.stack.boss,
      pool: testDb().pool,
      config: world.stack.config,
      logger: silentLogger,
      secrets: testSecrets,
      laneSweepMs: 300,
    });
    try {
      // Version 1 became pg-boss's dead letter; version 2 goes out once the sweeper sees the head gone.
      await eventually(async () => versionsOf(world.receiver.requests, id).length === 1, 20_000, 'the later delivery');
      expect(versionsOf(world.receiver.requests, id)).to.deep.equal([2]);
    } finally {
      await worker.stop();
    }
  });

  it('the upgrade puts deliveries queued before it into lanes, in version order', async () => {
    world.stack = await startWebhookStack({ worker: false });
    const { id: receiverId } = await world.stack.addReceiver(world.receiver.url);
    const id = randomUUID();
    // Three events queued the old way (one job each, no lane), newest first.
    await changes(id, 2);
    await testDb().pool.query(`delete from ${BOSS_SCHEMA}.job where name = $1`, [DELIVERY_QUEUE]);
    await testDb().pool.query('delete from delivery_lane');
    const { rows: events } = await testDb().pool.query<{ id: string }>(
      'select id from event where resource_id = $1 order by version desc',
      [id],
    );
    for (const e of events)
      await enqueueDeliveries(world.stack.boss, world.stack.boss.getDb(), [{ eventId: e.id, receiverId, attempt: 1 }]);
    expect((await pendingDeliveries(receiverId)).length).to.equal(3);
    // Back before the lanes migration, and through it again.
    const db = testDb();
    await db.pool.query(
      `delete from mikro_orm_migrations where name in ('Migration20261203000100_delivery_lanes', 'Migration20261203000200_delivery_mode')`,
    );
    await db.pool.query(`drop table delivery_lane; alter table receiver drop column delivery_mode`);
    await migrate(db.url, 3000, [...catalogEntities, ...apiKeyEntities]);
    const { rows: jobs } = await db.pool.query(`select 1 from ${BOSS_SCHEMA}.job where name = $1`, [DELIVERY_QUEUE]);
    expect(jobs, 'one job left in the queue: the head').to.have.length(1);
    const worker = await startDeliveryWorker({
      boss: world.stack.boss,
      pool: testDb().pool,
      config: world.stack.config,
      logger: silentLogger,
      secrets: testSecrets,
    });
    try {
      await eventually(async () => versionsOf(world.receiver.requests, id).length === 3, 10_000, 'three deliveries');
      expect(versionsOf(world.receiver.requests, id)).to.deep.equal([1, 2, 3]);
    } finally {
      await worker.stop();
    }
  });

  it('LATEST_STATE: after an outage, at most one delivery per changed record, the newest', async function () {
    world.stack = await startWebhookStack({ config: { backoffBaseMs: 200, backoffMaxMs: 200, maxAttempts: 20 } });
    const { id: receiverId } = await world.stack.addReceiver(world.receiver.url);
    await updateReceiver({ pool: testDb().pool, allowPrivateTargets: true, secrets: testSecrets }, receiverId, {
      mode: 'latest-state',
    });
    world.receiver.reply({ status: 503 });
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of ids) await changes(id, 4);
    // The outage lasts until each record's newest version has failed at least once: a delivery
    // already sent when a newer event came could otherwise still be answered after the outage (in
    // flight, nothing recalls it), and that is not what this test is about.
    await eventually(
      async () => ids.every((id) => versionsOf(world.receiver.requests, id).includes(5)),
      10_000,
      "each record's newest version tried",
    );
    const failed = world.receiver.requests.length;
    world.receiver.reply({ status: 200 });
    await eventually(
      async () =>
        (await pendingDeliveries(receiverId)).length === 0 &&
        (await testDb().pool.query(`select 1 from ${BOSS_SCHEMA}.job where name = $1`, [DELIVERY_QUEUE])).rowCount ===
          0,
      10_000,
      'drained',
    );
    const after = world.receiver.requests.slice(failed).filter((r) => r.headers['x-service-event-id']);
    for (const id of ids) expect(versionsOf(after, id), `record ${id}`).to.deep.equal([5]);
    const { rows } = await testDb().pool.query<{ n: number }>(
      `select count(*)::int as n from delivery_attempt where receiver_id = $1 and outcome = 'superseded'`,
      [receiverId],
    );
    expect(rows[0]!.n, 'superseded attempt rows').to.be.at.least(3 * 3);
  });

  it('LATEST_STATE: a delivery fetched but not yet sent is superseded by a newer event of its record', async () => {
    // One request at a time to the receiver: while a slow delivery of record A is in flight, record
    // B's first delivery is fetched and waits in the worker's memory (a pg-boss 'active' job), so
    // the enqueue of B's next event cannot replace it; the worker checks just before sending.
    world.stack = await startWebhookStack({ config: { concurrencyPerReceiver: 1, timeoutMs: 5000 } });
    const { id: receiverId } = await world.stack.addReceiver(world.receiver.url);
    await updateReceiver({ pool: testDb().pool, allowPrivateTargets: true, secrets: testSecrets }, receiverId, {
      mode: 'latest-state',
    });
    const [a, b] = [randomUUID(), randomUUID()];
    // A's delivery is answered once B's next event is written (it holds the receiver's one slot meanwhile).
    world.receiver.reply((r) => (bodyOf(r).resource.id === a ? { hang: true } : { status: 200 }));
    await changes(a, 0);
    await eventually(async () => versionsOf(world.receiver.requests, a).length === 1, 20_000, "A's delivery in flight");
    await changes(b, 0);
    const { rows: first } = await testDb().pool.query<{ id: string }>(
      'select id from event where resource_id = $1 and version = 1',
      [b],
    );
    await eventually(
      async () =>
        (
          await testDb().pool.query(
            `select 1 from ${BOSS_SCHEMA}.job where name = $1 and state = 'active' and data->>'eventId' = $2`,
            [DELIVERY_QUEUE, first[0]!.id],
          )
        ).rowCount === 1,
      20_000,
      "B's first delivery fetched while A's is in flight",
    );
    // B's next event, written while A's delivery still holds the receiver's one slot; then A is answered.
    await world.stack.api.writes.upsert(
      parseLearningOpportunityInput(buildLearningOpportunityInput({ id: b, title: 'Newer' })),
    );
    world.receiver.releaseHung();
    await eventually(
      async () =>
        versionsOf(world.receiver.requests, b).length >= 1 && (await pendingDeliveries(receiverId)).length === 0,
      10_000,
      'drained',
    );
    expect(versionsOf(world.receiver.requests, b)).to.deep.equal([2]);
    const { rows } = await testDb().pool.query<{ outcome: string }>(
      'select outcome from delivery_attempt where receiver_id = $1 and event_id = $2',
      [receiverId, first[0]!.id],
    );
    expect(rows.map((r) => r.outcome)).to.deep.equal(['superseded']);
    // Not a failure of the receiver: its health is untouched.
    const { rows: health } = await testDb().pool.query<{ failing_since: string | null }>(
      'select failing_since from receiver where id = $1',
      [receiverId],
    );
    expect(health[0]!.failing_since).to.equal(null);
  });

  it('replays and redeliveries skip what a newer delivery supersedes, unless told to include it', async () => {
    world.stack = await startWebhookStack();
    const { id: receiverId } = await world.stack.addReceiver(world.receiver.url);
    const id = randomUUID();
    await changes(id, 2);
    await eventually(async () => versionsOf(world.receiver.requests, id).length === 3, 20_000, 'three deliveries');
    const { rows: events } = await testDb().pool.query<{ id: string }>(
      'select id from event where resource_id = $1 order by version',
      [id],
    );
    const [v1, , v3] = events.map((e) => e.id);
    // An old dead letter of version 1 (as if it had died in an outage long ago), and one of version 3.
    await world.stack.boss.insert('webhook-dead-letter', [{ data: { eventId: v1, receiverId, attempts: 4 } }]);
    expect(await replayDeadLetters({ pool: testDb().pool, boss: world.stack.boss }, { receiverId })).to.deep.equal({
      replayed: 0,
      superseded: 1,
      remaining: 0,
    });
    expect(
      (await redeliverEvent({ pool: testDb().pool, boss: world.stack.boss }, v1!, receiverId)).superseded,
    ).to.equal(1);
    // The latest one is not superseded by itself.
    expect(
      (await redeliverEvent({ pool: testDb().pool, boss: world.stack.boss }, v3!, receiverId)).superseded,
    ).to.equal(0);
    await eventually(
      async () => versionsOf(world.receiver.requests, id).length === 4,
      20_000,
      'the redelivered latest',
    );
    // --include-superseded sends the old one anyway.
    expect(
      (
        await redeliverEvent({ pool: testDb().pool, boss: world.stack.boss }, v1!, receiverId, {
          includeSuperseded: true,
        })
      ).superseded,
    ).to.equal(0);
    await eventually(
      async () => versionsOf(world.receiver.requests, id).length === 5,
      20_000,
      'the old one, on request',
    );
    expect(versionsOf(world.receiver.requests, id)).to.deep.equal([1, 2, 3, 3, 1]);
  });
});
