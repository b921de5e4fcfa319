// The lane sweeper (queue/lanes.ts sweepLanes) racing the settlements of the same lanes, on real
// PostgreSQL: two workers settle (and claim the lanes' next deliveries) while the sweeper runs without
// pause and with no age threshold, and writers keep adding events. No lane whose head is alive may be
// moved: no delivery lost, never two of one record in flight, each record's deliveries in version order.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { type DeliveryWorker, startDeliveryWorker } from '../../src/webhooks/delivery/worker.ts';
import { BOSS_SCHEMA, DELIVERY_QUEUE } from '../../src/webhooks/queue/boss.ts';
import { sweepLanes } from '../../src/webhooks/queue/lanes.ts';
import { silentLogger } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { type ReceivedRequest, startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, resetWebhooks, startWebhookStack, testSecrets, type WebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

type Body = { resource: { id: string; version: number } };
const bodyOf = (r: ReceivedRequest) => JSON.parse(r.body.toString()) as Body;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the lane sweeper racing settlements', function () {
  this.timeout(120_000);
  let stack: WebhookStack | null = null;
  let receiver: TestReceiver;
  const workers: DeliveryWorker[] = [];
  beforeEach(async () => {
    await resetWebhooks();
    receiver = await startReceiver();
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await stack?.stop();
    stack = null;
    await receiver.close();
  });

  it('moves no live lane: nothing lost, one in flight per record, in order', async () => {
    stack = await startWebhookStack({
      worker: false,
      config: { backoffBaseMs: 10, backoffMaxMs: 40, maxAttempts: 30 },
    });
    const { id: receiverId } = await stack.addReceiver(receiver.url);
    // 30% failures, 0-6 ms to answer; requests of one record in flight at once are counted.
    const open = new Map<string, number>();
    let overlaps = 0;
    receiver.reply((r) => {
      const id = bodyOf(r).resource.id;
      const n = (open.get(id) ?? 0) + 1;
      if (n > 1) overlaps++;
      open.set(id, n);
      const delayMs = Math.floor(Math.random() * 7);
      setTimeout(() => open.set(id, open.get(id)! - 1), delayMs);
      return { status: Math.random() < 0.3 ? 503 : 200, delayMs };
    });
    const start = () =>
      startDeliveryWorker({
        boss: stack!.boss,
        pool: testDb().pool,
        config: stack!.config,
        logger: silentLogger,
        secrets: testSecrets,
        laneSweepMs: 5,
      });
    workers.push(await start(), await start());
    // The sweeper without pause, taking any lane whose head job it does not see.
    let sweeping = true;
    let moved = 0;
    const sweeper = (async () => {
      while (sweeping) {
        moved += await sweepLanes(testDb().pool, 0);
        await sleep(1);
      }
    })();
    const records = Array.from({ length: 6 }, () => randomUUID());
    const writer = async (id: string) => {
      const input = buildLearningOpportunityInput({ id });
      await stack!.api.writes.upsert(parseLearningOpportunityInput(input));
      await stack!.api.writes.publish(id);
      for (let i = 0; i < 12; i++)
        await stack!.api.writes.upsert(parseLearningOpportunityInput({ ...input, title: `Version ${i}` }));
    };
    await Promise.all(records.map(writer));
    const { rows: events } = await testDb().pool.query<{ id: string; resource_id: string; version: string }>(
      'select id, resource_id, version from event where resource_id = any($1::uuid[])',
      [records],
    );
    expect(events).to.have.length(records.length * 13);
    try {
      await eventually(
        async () => {
          const { rows } = await testDb().pool.query<{ n: number }>(
            `select count(distinct event_id)::int as n from delivery_attempt where receiver_id = $1 and outcome = 'success'`,
            [receiverId],
          );
          return rows[0]!.n === events.length;
        },
        60_000,
        'every event delivered with success',
      );
    } finally {
      sweeping = false;
      await sweeper;
    }
    expect(moved, 'lanes the sweeper moved (none had lost its head)').to.equal(0);
    expect(overlaps, 'requests of one record in flight at once').to.equal(0);
    const { rows: open_ } = await testDb().pool.query(
      `select 1 from delivery_lane where receiver_id = $1 and head_job is not null
       union all select 1 from ${BOSS_SCHEMA}.job where name = $2`,
      [receiverId, DELIVERY_QUEUE],
    );
    expect(open_, 'lanes and jobs left open').to.have.length(0);
    for (const id of records) {
      const versions = receiver.requests
        .map(bodyOf)
        .filter((b) => b.resource.id === id)
        .map((b) => b.resource.version);
      expect(
        versions.every((v, i) => i === 0 || v >= versions[i - 1]!),
        `record ${id}: ${versions.join(',')}`,
      ).to.equal(true);
      expect(new Set(versions).size, `record ${id}: every version`).to.equal(13);
    }
  });
});
