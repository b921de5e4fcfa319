// What a lane's step costs the worker besides the send (bench/README.md, "CPU per delivery"): the
// settlement claims the lane's next delivery, so a step needs no fetch, and the settling statements
// run on one connection kept for them, so the statement is prepared and planned once, not once per
// connection of the pool that happens to run it.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import pg from 'pg';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { startDeliveryWorker } from '../../src/webhooks/delivery/worker.ts';
import { createAttemptRecorder } from '../../src/webhooks/delivery/record-attempt.ts';
import { DELIVERY_QUEUE, enqueueDeliveries, fetchDeliveries } from '../../src/webhooks/queue/boss.ts';
import { silentLogger } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { type ReceivedRequest } from '../support/receiver.ts';
import { eventually, jobs, startWebhookStack, testSecrets, webhookTestWorld } from '../support/webhooks.ts';

const versionOf = (r: ReceivedRequest) =>
  (JSON.parse(r.body.toString()) as { resource: { version: number } }).resource.version;

describe('a hot lane', function () {
  this.timeout(60_000);
  const world = webhookTestWorld();

  it('moves on without a fetch per step: the queue found empty is not asked again after each delivery', async () => {
    world.stack = await startWebhookStack({ worker: false });
    const { stack } = world;
    await stack.addReceiver(world.receiver.url);
    const id = randomUUID();
    const input = buildLearningOpportunityInput({ id });
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(id);
    for (let i = 1; i <= 15; i++)
      await stack.api.writes.upsert(parseLearningOpportunityInput({ ...input, title: `Version ${i}` }));
    // 16 deliveries of one record: one job (the lane's head), 15 waiting in the lane.
    expect(await jobs(DELIVERY_QUEUE)).to.have.length(1);
    let fetches = 0;
    const fetch = stack.boss.fetch.bind(stack.boss);
    stack.boss.fetch = ((...args: Parameters<typeof fetch>) => {
      fetches++;
      return fetch(...args);
    }) as typeof stack.boss.fetch;
    // No poll during the test: every fetch is the worker's own decision.
    const worker = await startDeliveryWorker({
      boss: stack.boss,
      pool: stack.db.pool,
      config: { ...stack.config, pollIntervalMs: 60_000 },
      logger: silentLogger,
      secrets: testSecrets,
    });
    try {
      await eventually(async () => world.receiver.requests.length === 16, 15_000, 'sixteen deliveries');
      expect(world.receiver.requests.map(versionOf)).to.deep.equal([...Array(16).keys()].map((i) => i + 1));
      // The head's fetch, and the one that found the queue empty; before, every one of the 15 steps
      // fetched again when its delivery finished (and found nothing: the settlement had claimed the next).
      expect(fetches).to.be.at.most(3);
    } finally {
      await worker.stop({ timeoutMs: 2000 });
    }
  });

  it('settles on one connection: the settling statement is prepared on one connection of the pool, not on each it lands on', async () => {
    world.stack = await startWebhookStack({ worker: false });
    const { boss, db, config } = world.stack;
    const { id: receiverId } = await world.stack.addReceiver(world.receiver.url);
    const { rows: events } = await db.pool.query<{ id: string }>('select id from event limit 1');
    await enqueueDeliveries(
      boss,
      boss.getDb(),
      [1, 2].map((attempt) => ({ eventId: events[0]!.id, receiverId, attempt })),
    );
    const claimed = await fetchDeliveries(boss, { batchSize: 2, groupConcurrency: 100, ignoreGroups: [] });
    expect(claimed).to.have.length(2);
    // A pool of its own: the suite's shared pool may keep a connection on which an earlier test's
    // worker prepared the statement. The settling connection is kept far longer than the default
    // second between the two settlements: on a loaded machine the new connection below took longer
    // than that (the held one was released and handed to `other`).
    const pool = new pg.Pool({ connectionString: db.url, max: 10 });
    try {
      const recorder = createAttemptRecorder({ pool, config, logger: silentLogger, holdSettlerMs: 60_000 });
      const result = {
        outcome: 'success' as const,
        statusCode: 200,
        error: null,
        responseExcerpt: 'ok',
        durationMs: 3,
      };
      const settle = (job: (typeof claimed)[number]) =>
        recorder.record({ job, data: job.data, startedAt: new Date(), result });
      await settle(claimed[0]!);
      // The pool hands out the connection released last: the one the first settlement ran on, unless
      // the recorder still holds it.
      const other = await pool.connect();
      try {
        await settle(claimed[1]!);
      } finally {
        other.release();
      }
      await recorder.drain();
      const clients = await Promise.all(Array.from({ length: pool.totalCount }, () => pool.connect()));
      try {
        const prepared = await Promise.all(
          clients.map(async (c) => {
            const { rows } = await c.query<{ n: number }>(
              `select count(*)::int as n from pg_prepared_statements where name = 'webhook-settle'`,
            );
            return rows[0]!.n;
          }),
        );
        expect(prepared.reduce((a, b) => a + b, 0)).to.equal(1);
      } finally {
        for (const c of clients) c.release();
      }
    } finally {
      await pool.end();
    }
    // Both settled.
    expect(await jobs(DELIVERY_QUEUE, { receiverId })).to.deep.equal([]);
  });
});
