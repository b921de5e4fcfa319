// Deliveries converge (issue 20, docs/contract.md, "Delivery guarantees"): a receiver that follows the contract to
// the letter (de-duplicate on the event id, upsert/remove, no version check), failing 40% of its
// deliveries with a few ms of jitter, ends with an exact copy of the catalog after hundreds of quick
// concurrent changes to a few dozen records (create, update, publish, archive, delete, re-create),
// delivered by two workers: 0 stale, 0 resurrected, 0 missing when compared with
// GET /v1/learning-opportunities/{id} for every id. In both delivery modes; with one of the workers
// a separate process killed with SIGKILL mid-flight; after a replay of dead letters from an outage
// once newer changes were delivered; and for a receiver built on the receiver kit (LATEST_STATE,
// duplicates and late old events injected). On the unordered delivery code, the first case ends
// with stale, resurrected or missing records.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { replayDeadLetters } from '../../src/webhooks/delivery/redeliver.ts';
import { startDeliveryWorker, type DeliveryWorker } from '../../src/webhooks/delivery/worker.ts';
import { BOSS_SCHEMA, DEAD_LETTER_QUEUE } from '../../src/webhooks/queue/boss.ts';
import { disableReceiver, enableReceiver, updateReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { createTestKey, silentLogger } from '../support/api.ts';
import { type RoleProcess, startRoleProcess } from '../support/role-process.ts';
import { TEST_SECRET_KEY, testSecrets, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';
import {
  churn,
  type CopyReceiver,
  drained,
  driftFromCatalog,
  seededRandom,
  startKitReceiver,
  startNaiveReceiver,
} from './convergence-support.ts';

const RECORDS = 30;
const CHANGES = 300;
const WRITERS = 6;
const FAIL_RATE = 0.4;
const JITTER_MS = 5;
const SEED = Number(process.env.CONVERGENCE_SEED ?? 20);
// Retries come quickly and rarely run out (0.4^14 per delivery): a dead letter would be a gap by
// design, not a drift (the replay case makes them on purpose).
const CONFIG = { maxAttempts: 14, backoffBaseMs: 10, backoffMaxMs: 150, concurrencyPerReceiver: 4, timeoutMs: 1000 };
const NO_DRIFT = { stale: [], resurrected: [], missing: [] };

describe('webhook deliveries converge (docs/contract.md, "Delivery guarantees")', function () {
  this.timeout(120_000);
  let second: DeliveryWorker;
  let key: string;
  const receivers: CopyReceiver[] = [];
  // Registered before the stack's own: the second worker stops before the pg-boss it shares.
  after(() => second?.stop({ timeoutMs: 2000 }));
  const stack = useWebhookStack({ config: CONFIG });

  before(async () => {
    second = await startDeliveryWorker({
      boss: stack.boss,
      pool: testDb().pool,
      config: stack.config,
      logger: silentLogger,
      secrets: testSecrets,
    });
    key = await createTestKey(['catalog:read']);
  });
  after(async () => {
    for (const r of receivers) await r.close();
  });

  /** Registers `receiver` (in `mode`), runs `total` changes to fresh records, drains; returns the ids. */
  async function scenario(
    receiver: CopyReceiver,
    options: { seed: number; mode?: string; total?: number; ids?: string[]; during?: () => Promise<void> },
  ) {
    receivers.push(receiver);
    const registered = await stack.addReceiver(receiver.url);
    if (options.mode)
      await updateReceiver({ pool: testDb().pool, allowPrivateTargets: true, secrets: testSecrets }, registered.id, {
        mode: options.mode,
      });
    const ids = options.ids ?? Array.from({ length: RECORDS }, () => randomUUID());
    const changes = await Promise.all([
      churn(stack.api.writes, ids, {
        total: options.total ?? CHANGES,
        writers: WRITERS,
        random: seededRandom(options.seed),
      }),
      options.during?.(),
    ]);
    await drained(testDb(), 60_000);
    expect(changes[0].writes, 'enough changes made').to.be.greaterThan((options.total ?? CHANGES) / 2);
    return { ids, receiverId: registered.id };
  }
  const forget = (receiverId: string) => testDb().pool.query('delete from receiver where id = $1', [receiverId]);

  it('ALL_EVENTS: a contract-following receiver without version checks ends exact', async () => {
    const receiver = await startNaiveReceiver({
      failRate: FAIL_RATE,
      jitterMs: JITTER_MS,
      random: seededRandom(SEED + 1),
    });
    const { ids, receiverId } = await scenario(receiver, { seed: SEED });
    await forget(receiverId);
    expect(receiver.stats.requests - receiver.stats.acknowledged, 'about 40% failed').to.be.greaterThan(
      receiver.stats.requests * 0.25,
    );
    expect(await driftFromCatalog(stack.api, key, ids, receiver.records)).to.deep.equal(NO_DRIFT);
  });

  it('LATEST_STATE: the same receiver ends exact, with fewer deliveries', async () => {
    const receiver = await startNaiveReceiver({
      failRate: FAIL_RATE,
      jitterMs: JITTER_MS,
      random: seededRandom(SEED + 2),
    });
    const { ids, receiverId } = await scenario(receiver, { seed: SEED + 3, mode: 'latest-state' });
    const { rows } = await testDb().pool.query<{ n: number }>(
      `select count(*)::int as n from delivery_attempt where receiver_id = $1 and outcome = 'superseded'`,
      [receiverId],
    );
    await forget(receiverId);
    expect(rows[0]!.n, 'deliveries superseded').to.be.greaterThan(0);
    expect(await driftFromCatalog(stack.api, key, ids, receiver.records)).to.deep.equal(NO_DRIFT);
  });

  it('ALL_EVENTS with a worker process killed with SIGKILL mid-flight: ends exact', async () => {
    const receiver = await startNaiveReceiver({
      failRate: FAIL_RATE,
      jitterMs: JITTER_MS,
      random: seededRandom(SEED + 4),
    });
    const child: RoleProcess = await startRoleProcess('worker', {
      SECRET_ENCRYPTION_KEY: TEST_SECRET_KEY,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_MAX_ATTEMPTS: String(CONFIG.maxAttempts),
      WEBHOOK_BACKOFF_BASE_MS: String(CONFIG.backoffBaseMs),
      WEBHOOK_BACKOFF_MAX_MS: String(CONFIG.backoffMaxMs),
      WEBHOOK_TIMEOUT_MS: String(CONFIG.timeoutMs),
    });
    try {
      // Killed while the changes are being delivered: its claims expire and go to the other workers.
      const kill = async () => {
        while (receiver.stats.requests < 80) await new Promise((resolve) => setTimeout(resolve, 10));
        child.child.kill('SIGKILL');
      };
      const { ids, receiverId } = await scenario(receiver, { seed: SEED + 5, during: kill });
      await forget(receiverId);
      expect(child.child.signalCode).to.equal('SIGKILL');
      expect(await driftFromCatalog(stack.api, key, ids, receiver.records)).to.deep.equal(NO_DRIFT);
    } finally {
      if (child.child.exitCode === null && child.child.signalCode === null) child.child.kill('SIGKILL');
    }
  });

  it('after an outage: dead letters replayed once newer changes were delivered do not regress the copy', async () => {
    const receiver = await startNaiveReceiver({
      failRate: FAIL_RATE,
      jitterMs: JITTER_MS,
      random: seededRandom(SEED + 6),
    });
    const ids = Array.from({ length: RECORDS }, () => randomUUID());
    // The outage: every delivery fails; the operator gives up and disables the receiver, which
    // makes its open deliveries dead letters; enabled again, it gets the newer changes.
    receivers.push(receiver);
    const { id: receiverId } = await stack.addReceiver(receiver.url);
    receiver.down(503);
    await churn(stack.api.writes, ids, { total: CHANGES / 2, writers: WRITERS, random: seededRandom(SEED + 7) });
    await disableReceiver({ pool: testDb().pool }, receiverId);
    await drained(testDb(), 60_000);
    await enableReceiver({ pool: testDb().pool }, receiverId);
    receiver.down(null);
    await churn(stack.api.writes, ids, { total: CHANGES / 2, writers: WRITERS, random: seededRandom(SEED + 8) });
    await drained(testDb(), 60_000);
    const outage = { receiverId };
    const { rows } = await testDb().pool.query<{ n: number }>(
      `select count(*)::int as n from ${BOSS_SCHEMA}.job where name = $2 and data->>'receiverId' = $1`,
      [outage.receiverId, DEAD_LETTER_QUEUE],
    );
    expect(rows[0]!.n, 'dead letters from the outage').to.be.greaterThan(20);
    const replay = await replayDeadLetters(
      { pool: testDb().pool, boss: stack.boss },
      { receiverId: outage.receiverId },
    );
    await drained(testDb(), 60_000);
    await forget(outage.receiverId);
    expect(replay.superseded, 'letters skipped as superseded').to.be.greaterThan(0);
    expect(await driftFromCatalog(stack.api, key, ids, receiver.records)).to.deep.equal(NO_DRIFT);
  });

  it('a receiver built on the kit (LATEST_STATE, duplicates and late old events injected) ends exact', async () => {
    const receiver = await startKitReceiver({
      failRate: FAIL_RATE,
      jitterMs: JITTER_MS,
      duplicateRate: 0.3,
      random: seededRandom(SEED + 9),
    });
    const { ids, receiverId } = await scenario(receiver, { seed: SEED + 10, mode: 'latest-state' });
    await receiver.close();
    await forget(receiverId);
    expect(receiver.stats.dropped, 'injected old events dropped by version').to.be.greaterThan(0);
    expect(await driftFromCatalog(stack.api, key, ids, receiver.records)).to.deep.equal(NO_DRIFT);
  });
});
