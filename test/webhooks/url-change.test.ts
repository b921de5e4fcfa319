// A receiver moved to a new URL (`receivers update --url`, GraphQL updateWebhookReceiver) gets its
// next deliveries there, retries of older ones included: the worker reads a receiver's URL with each
// batch it sends, never from a copy kept since an earlier one.
import { expect } from 'chai';
import { updateReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { testDb } from '../hooks.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { publishOne, testSecrets, useWebhookStack } from '../support/webhooks.ts';

describe('a receiver moved to a new URL', function () {
  this.timeout(60_000);
  const stack = useWebhookStack({ config: { maxAttempts: 20, backoffBaseMs: 20, backoffMaxMs: 100 } });
  const receivers: TestReceiver[] = [];
  after(async () => {
    for (const r of receivers) await r.close();
  });
  const deps = () => ({ pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true });

  it('gets its next deliveries, and the retries of failing ones, at the new URL', async () => {
    const old = await startReceiver();
    const moved = await startReceiver();
    receivers.push(old, moved);
    const { id } = await stack.addReceiver(old.url);
    await publishOne(stack);
    await old.waitFor(1);
    // The old address fails from now on: what is retried must go to the new one.
    old.reply({ status: 503 });
    const failing = await publishOne(stack);
    await old.waitFor(2);
    await updateReceiver(deps(), id, { url: moved.url });
    const next = await publishOne(stack);
    const got = await moved.waitFor(2, 10_000);
    const ids = got.map((r) => (JSON.parse(r.body.toString()) as { id: string }).id);
    expect(ids).to.have.members([failing, next]);
  });
});
