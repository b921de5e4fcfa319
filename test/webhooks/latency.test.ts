// Low latency from commit to first attempt: the worker wakes on pg-boss's NOTIFY, not on its poll.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { useWebhookStack } from '../support/webhooks.ts';

describe('webhook delivery latency', () => {
  // A poll far longer than the test: only a notification can wake the worker in time.
  const stack = useWebhookStack({ config: { pollIntervalMs: 60_000 } });
  let receiver: TestReceiver;
  before(async () => {
    receiver = await startReceiver();
    await stack.addReceiver(receiver.url);
  });
  after(async () => {
    await receiver.close();
  });

  it("delivers each of several events on its commit's notification, long before the worker's 60 s poll", async () => {
    const latencies: number[] = [];
    for (let i = 0; i < 5; i++) {
      const input = buildLearningOpportunityInput();
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await stack.api.writes.publish(input.id);
      const committed = Date.now();
      const [request] = (await receiver.waitFor(i + 1, 20_000)).slice(i);
      latencies.push(request!.arrivedAt - committed);
    }
    // Woken by NOTIFY, not by the 60 s poll: the typical delivery comes within tens of ms. The
    // benchmark (npm run bench:delivery) measures that; here, on a loaded 2-core machine (pick-up
    // took ~1 s at load 10-14), every delivery is only held far below the poll it must not wait for.
    expect(Math.max(...latencies), `latencies ${latencies.join(', ')} ms`).to.be.below(15_000);
  });
});
