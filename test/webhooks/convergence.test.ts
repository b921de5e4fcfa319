// Deliveries converge (issue 20, CONTRACT.md section 11): a receiver that follows the contract to
// the letter (de-duplicate on the event id, upsert/remove, no version check), failing 40% of its
// deliveries with a few ms of jitter, ends with an exact copy of the catalog after hundreds of quick
// concurrent changes to a few dozen records, delivered by two workers: 0 stale, 0 resurrected,
// 0 missing when compared with GET /v1/learning-opportunities/{id} for every id.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { startDeliveryWorker, type DeliveryWorker } from '../../src/webhooks/delivery/worker.ts';
import { createTestKey, silentLogger } from '../support/api.ts';
import { resetWebhooks, startWebhookStack, testSecrets, type WebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';
import { churn, type CopyReceiver, drained, driftFromCatalog, seededRandom, startKitReceiver, startNaiveReceiver } from './convergence-support.ts';

const RECORDS = 30;
const CHANGES = 400;
const WRITERS = 6;
const FAIL_RATE = 0.4;
const JITTER_MS = 5;
const SEED = Number(process.env.CONVERGENCE_SEED ?? 20);

describe('webhook deliveries converge (CONTRACT.md section 11)', function () {
  this.timeout(120_000);
  let stack: WebhookStack;
  let second: DeliveryWorker;
  let key: string;
  const receivers: CopyReceiver[] = [];

  before(async () => {
    await resetWebhooks();
    // Retries come quickly and rarely run out (0.4^14 per delivery): a dead letter would be a gap
    // by design, not a drift.
    stack = await startWebhookStack({ config: { maxAttempts: 14, backoffBaseMs: 10, backoffMaxMs: 150, concurrencyPerReceiver: 4 } });
    second = await startDeliveryWorker({ boss: stack.boss, pool: testDb().pool, config: stack.config, logger: silentLogger, secrets: testSecrets });
    key = await createTestKey(['catalog:read']);
  });
  after(async () => {
    await second.stop({ timeoutMs: 2000 });
    await stack.stop();
    for (const r of receivers) await r.close();
  });

  async function run(options: { seed: number }): Promise<{ ids: string[]; changes: Awaited<ReturnType<typeof churn>> }> {
    const ids = Array.from({ length: RECORDS }, () => randomUUID());
    const changes = await churn(stack.api.writes, ids, { total: CHANGES, writers: WRITERS, random: seededRandom(options.seed) });
    await drained(testDb(), 60_000);
    return { ids, changes };
  }

  it('ALL_EVENTS: a contract-following receiver without version checks ends exact', async () => {
    const receiver = await startNaiveReceiver({ failRate: FAIL_RATE, jitterMs: JITTER_MS, random: seededRandom(SEED + 1) });
    receivers.push(receiver);
    const registered = await stack.addReceiver(receiver.url);
    const { ids, changes } = await run({ seed: SEED });
    await testDb().pool.query('delete from receiver where id = $1', [registered.id]);
    const drift = await driftFromCatalog(stack.api, key, ids, receiver.records);
    expect(changes.writes, 'enough changes made').to.be.greaterThan(CHANGES / 2);
    expect(receiver.stats.requests - receiver.stats.acknowledged, 'about 40% failed').to.be.greaterThan(receiver.stats.requests * 0.25);
    expect(drift).to.deep.equal({ stale: [], resurrected: [], missing: [] });
  });
});
