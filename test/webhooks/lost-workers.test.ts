// Deliveries whose worker died mid-attempt (a claim that was never settled): when pg-boss hands the
// expired job out again it is recorded as a worker_lost attempt and delivered; when its lost-worker
// retries are used up, pg-boss's own dead letter reads like every other one.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { fetchDeliveries, handBackJobs } from '../../src/webhooks/queue/boss.ts';
import { recordLostAttempts } from '../../src/webhooks/queue/lost-attempts.ts';
import { listDeadLetters, replayDeadLetters } from '../../src/webhooks/delivery/redeliver.ts';
import { startDeliveryWorker } from '../../src/webhooks/delivery/worker.ts';
import { silentLogger } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, resetWebhooks, startWebhookStack, testSecrets, type WebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

describe('deliveries of a worker that died', function () {
  this.timeout(30_000);
  let receiver: TestReceiver;
  let stack: WebhookStack | null = null;
  beforeEach(async () => {
    await resetWebhooks();
    receiver = await startReceiver();
  });
  afterEach(async () => {
    await stack?.stop();
    await receiver.close();
  });

  /** Publishes one event to the receiver, and claims its job as a worker would, then "dies" (never settles). */
  async function claimAndDie(config: { lostRetryLimit: number }): Promise<{ eventId: string; receiverId: string }> {
    // A short expiry (timeout 1 s: 4 s; a shorter timeout turned a slow local answer on a loaded
    // machine into a timeout and an extra attempt); supervised, so expired claims are handed out again.
    stack = await startWebhookStack({ worker: false, supervise: true, config: { timeoutMs: 1000, ...config } });
    const { id: receiverId } = await stack.addReceiver(receiver.url);
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    const claimed = await fetchDeliveries(stack.boss, { batchSize: 10, groupConcurrency: 10, ignoreGroups: [] });
    expect(claimed).to.have.length(1);
    return { eventId: claimed[0]!.data.eventId, receiverId };
  }

  /** The first dead letter, once there is one. */
  const firstDeadLetter = async () =>
    (
      await eventually(
        async () => {
          const list = await listDeadLetters(testDb().pool);
          return list.length > 0 && list;
        },
        20_000,
        'a dead letter',
      )
    )[0]!;

  const attempts = async (eventId: string) =>
    (
      await testDb().pool.query<{ attempt: number; outcome: string; error: string | null }>(
        'select attempt, outcome, error from delivery_attempt where event_id = $1 order by id',
        [eventId],
      )
    ).rows;

  it('records the lost attempt as worker_lost when its expired job comes back, then delivers it', async () => {
    const { eventId } = await claimAndDie({ lostRetryLimit: 2 });
    const worker = await startDeliveryWorker({
      boss: stack!.boss,
      pool: stack!.db.pool,
      config: stack!.config,
      logger: silentLogger,
      secrets: testSecrets,
    });
    try {
      const [request] = await receiver.waitFor(1, 20_000);
      expect(request!.headers['x-service-event-id']).to.equal(eventId);
      await eventually(async () => (await attempts(eventId)).length === 2, 5000, 'two attempt rows');
      expect(await attempts(eventId)).to.deep.equal([
        { attempt: 1, outcome: 'worker_lost', error: 'worker_lost' },
        { attempt: 2, outcome: 'success', error: null },
      ]);
    } finally {
      await worker.stop();
    }
  });

  it('numbers the attempts after a loss on, and counts the lost one only toward the lost-worker limit', async () => {
    const { eventId, receiverId } = await claimAndDie({ lostRetryLimit: 2 });
    receiver.reply({ status: 500 });
    const config = { ...stack!.config, maxAttempts: 2, backoffBaseMs: 50 };
    const worker = await startDeliveryWorker({
      boss: stack!.boss,
      pool: stack!.db.pool,
      config,
      logger: silentLogger,
      secrets: testSecrets,
    });
    try {
      const dead = await firstDeadLetter();
      // Two failed attempts beside the lost one: WEBHOOK_MAX_ATTEMPTS (2) counts the answered ones.
      expect(await attempts(eventId)).to.deep.equal([
        { attempt: 1, outcome: 'worker_lost', error: 'worker_lost' },
        { attempt: 2, outcome: 'http_error', error: null },
        { attempt: 3, outcome: 'http_error', error: null },
      ]);
      expect(receiver.requests).to.have.length(2);
      expect(dead).to.include({ eventId, receiverId, attempts: 3 });
    } finally {
      await worker.stop();
    }
  });

  it('records one worker_lost per loss, however often the job is handed back unsent and fetched again', async () => {
    const { eventId } = await claimAndDie({ lostRetryLimit: 3 });
    const handedOut = async () => {
      const jobs = await eventually(
        async () => {
          const found = await fetchDeliveries(stack!.boss, { batchSize: 10, groupConcurrency: 10, ignoreGroups: [] });
          return found.length > 0 && found;
        },
        20_000,
        'the job handed out',
      );
      await recordLostAttempts(stack!.db.pool, jobs); // what a worker does with every fetched batch
      return jobs[0]!;
    };
    // A worker whose receiver has no room hands the job back unsent; it is fetched again, three times.
    for (let i = 0; i < 3; i++) {
      const job = await handedOut();
      expect(job.retryCount).to.equal(1);
      await handBackJobs(stack!.boss, [job.id]);
    }
    expect(await attempts(eventId)).to.deep.equal([{ attempt: 1, outcome: 'worker_lost', error: 'worker_lost' }]);
    // A second loss: the job is claimed and its worker dies again; it comes back once more, counted.
    await handedOut();
    expect((await handedOut()).retryCount).to.equal(2);
    expect(await attempts(eventId)).to.deep.equal([
      { attempt: 1, outcome: 'worker_lost', error: 'worker_lost' },
      { attempt: 2, outcome: 'worker_lost', error: 'worker_lost' },
    ]);
  });

  it('lists a delivery pg-boss dead-lettered after its lost-worker retries like any dead letter, and replays it', async () => {
    const { eventId, receiverId } = await claimAndDie({ lostRetryLimit: 0 });
    const dead = await firstDeadLetter();
    expect(dead).to.include({ eventId, receiverId, attempts: 1, lastError: 'worker_lost' });
    expect(await replayDeadLetters({ pool: testDb().pool, boss: stack!.boss })).to.deep.equal({
      replayed: 1,
      superseded: 0,
      remaining: 0,
    });
  });
});
