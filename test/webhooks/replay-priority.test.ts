// A replay of many dead letters to one receiver goes behind every other delivery: a new delivery to
// another receiver is sent at once, not after the replay's backlog (the fetch takes the oldest ready
// jobs of the highest priority first), and the replay itself still completes.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { DEAD_LETTER_QUEUE, type DeadLetterData } from '../../src/webhooks/queue/boss.ts';
import { replayDeadLetters } from '../../src/webhooks/delivery/redeliver.ts';
import { startDeliveryWorker } from '../../src/webhooks/delivery/worker.ts';
import { silentLogger } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { testSecrets, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

const REPLAYED = 2000;

describe('dead-letter replay behind live deliveries', function () {
  this.timeout(120_000); // 2,000 deliveries: a minute or more on a loaded 2-core machine
  const stack = useWebhookStack({ worker: false });
  let a: TestReceiver;
  let b: TestReceiver;
  before(async () => {
    [a, b] = [await startReceiver(), await startReceiver()];
  });
  after(async () => {
    await a.close();
    await b.close();
  });

  it("sends another receiver's new deliveries before a replay of 2,000 dead letters queued ahead of them", async () => {
    const receiverA = await stack.addReceiver(a.url);
    await stack.addReceiver(b.url);
    const { rows: events } = await testDb().pool.query<{ id: string }>(
      `insert into event (id, type, resource_id, occurred_at, body)
       select gen_random_uuid(), 'LEARNING_OPPORTUNITY_PUBLISHED', gen_random_uuid(), now(), '{"replayed":true}' from generate_series(1, $1) returning id`,
      [REPLAYED],
    );
    // Receiver A's dead letters, as the worker leaves them after the last failed attempt.
    await stack.boss.insert(
      DEAD_LETTER_QUEUE,
      events.map((e) => ({ data: { eventId: e.id, receiverId: receiverA.id, attempts: 4 } satisfies DeadLetterData })),
    );
    expect(
      await replayDeadLetters({ pool: testDb().pool, boss: stack.boss }, { receiverId: receiverA.id }),
    ).to.deep.equal({ replayed: REPLAYED, superseded: 0, remaining: 0 });

    const worker = await startDeliveryWorker({
      boss: stack.boss,
      pool: testDb().pool,
      config: stack.config,
      logger: silentLogger,
      secrets: testSecrets,
    });
    try {
      // While the replay flows, three changes are published, each one delivery to each receiver.
      // Counted for each: how many replayed deliveries A received between its commit and B's receipt.
      const meanwhile: number[] = [];
      for (let i = 0; i < 3; i++) {
        await a.waitFor(100 + 200 * i, 10_000);
        const input = buildLearningOpportunityInput();
        await stack.api.writes.upsert(parseLearningOpportunityInput(input));
        await stack.api.writes.publish(input.id);
        const atCommit = a.requests.length;
        const live = (await b.waitFor(i + 1, 10_000))[i]!;
        expect(JSON.parse(live.body.toString())).to.nested.include({ 'resource.id': input.id });
        meanwhile.push(a.requests.filter((r) => r.arrivedAt < live.arrivedAt).length - atCommit);
      }
      // Behind the replay (same priority), B's first delivery waited for 1,580-1,640 of A's.
      expect(Math.max(...meanwhile), `replayed deliveries sent while B's waited: ${meanwhile.join(', ')}`).to.be.below(
        500,
      );
      // The replay is not starved: every replayed delivery and A's three live ones arrive.
      const all = await a.waitFor(REPLAYED + 3, 20_000);
      expect(all.filter((r) => r.body.toString() === '{"replayed":true}')).to.have.length(REPLAYED);
    } finally {
      await worker.stop();
    }
  });
});
