// One slow receiver never delays the others: it holds at most WEBHOOK_CONCURRENCY_PER_RECEIVER of the
// worker's slots, and the worker refills a slot the moment a delivery ends.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { useWebhookStack } from '../support/webhooks.ts';

describe('webhook receiver isolation', () => {
  let slow: TestReceiver;
  let fast: TestReceiver;
  // Registered before the stack's own: the hung requests are let go before its worker stops.
  after(() => slow?.releaseHung());
  // Fewer worker slots than the slow receiver's backlog: without the per-receiver limit it would take them all.
  const stack = useWebhookStack({ config: { workerConcurrency: 4, concurrencyPerReceiver: 2, timeoutMs: 15_000 } });

  before(async () => {
    slow = await startReceiver();
    fast = await startReceiver();
    slow.reply({ hang: true });
    await stack.addReceiver(slow.url);
    await stack.addReceiver(fast.url);
  });
  after(async () => {
    await slow.close();
    await fast.close();
  });

  it('delivers to a fast receiver promptly while a hanging one holds only its own share of slots', async () => {
    const committedAt = new Map<string, number>();
    for (let i = 0; i < 8; i++) {
      const input = buildLearningOpportunityInput();
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await stack.api.writes.publish(input.id);
      committedAt.set(input.id, Date.now());
    }
    const delivered = await fast.waitFor(8, 12_000);
    const latencies = delivered.map(
      (r) =>
        r.arrivedAt - committedAt.get((JSON.parse(r.body.toString()) as { resource: { id: string } }).resource.id)!,
    );
    // Each one before the slow receiver's first timeout (15 s) could have freed a slot (typically
    // within tens of ms; the bound is generous for a loaded 2-core machine).
    expect(Math.max(...latencies), `latencies ${latencies.join(', ')} ms`).to.be.below(10_000);
    expect(slow.requests.length, 'requests held by the slow receiver at once').to.equal(2);
  });
});
