// A receiver whose sealed signing secret does not open fails only its own deliveries: each is
// recorded as a `secret_unavailable` attempt, retried, then dead-lettered, with one warning for the
// receiver (not one per delivery), while every other receiver of the same batches is delivered.
// Both ways it happens: a damaged ciphertext (one flipped bit), and a worker that still holds only
// the old key while an API already restarted with the new one seals a secret (docs/operations.md, key rotation).
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { createLogger } from '../../src/kernel/logger.ts';
import { deliveryAttempts } from '../../src/kernel/metrics.ts';
import { DEAD_LETTER_QUEUE } from '../../src/webhooks/queue/boss.ts';
import { addReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { createSecretKeyring } from '../../src/webhooks/secrets/secret-box.ts';
import { startDeliveryWorker } from '../../src/webhooks/delivery/worker.ts';
import { createTestKey, graphql } from '../support/api.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import {
  eventually,
  jobs,
  publishOne,
  resetWebhooks,
  startWebhookStack,
  TEST_SECRET_KEY,
  type WebhookStack,
} from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

const EVENTS = 3;
const MAX_ATTEMPTS = 2;
const WARNING = "receiver's signing secret cannot be opened";

describe('a receiver secret that cannot be opened', function () {
  this.timeout(30_000);
  let stack: WebhookStack;
  let healthy: TestReceiver;
  let broken: TestReceiver;
  let logged: string[] = [];
  const logSink = new Writable({
    write: (chunk: Buffer, _encoding, done) =>
      void (logged.push(...chunk.toString().split('\n').filter(Boolean)), done()),
  });

  beforeEach(async () => {
    await resetWebhooks();
    logged = [];
    stack = await startWebhookStack({
      // The healthy receiver lives in this busy test process: a slow answer must not become a retry
      // (a duplicate it would then receive; seen once in a full run on a loaded machine).
      config: { maxAttempts: MAX_ATTEMPTS, backoffBaseMs: 50, backoffMaxMs: 100, timeoutMs: 15_000 },
      logger: createLogger({ level: 'info', destination: logSink }),
    });
    healthy = await startReceiver();
    broken = await startReceiver();
  });
  afterEach(async () => {
    await stack.stop();
    await healthy.close();
    await broken.close();
  });

  async function publish(count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push(await publishOne(stack));
    return ids;
  }
  const attemptsOf = async (receiverId: string) =>
    (
      await testDb().pool.query<{
        event_id: string;
        attempt: number;
        outcome: string;
        error: string | null;
        dead_lettered: boolean;
      }>(
        'select event_id, attempt, outcome, error, dead_lettered from delivery_attempt where receiver_id = $1 order by event_id, attempt',
        [receiverId],
      )
    ).rows;
  const metric = async (outcome: string) =>
    (await deliveryAttempts.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;

  /** Every event reaches the healthy receiver; the broken one gets nothing, MAX_ATTEMPTS recorded attempts per event, then a dead letter; one warning. */
  async function expectOnlyBrokenFails(brokenId: string, eventIds: string[]): Promise<void> {
    const delivered = await healthy.waitFor(EVENTS, 15_000);
    expect(new Set(delivered.map((r) => r.headers['x-service-event-id']))).to.deep.equal(new Set(eventIds));
    const rows = await eventually(
      async () => {
        const r = await attemptsOf(brokenId);
        return r.filter((a) => a.dead_lettered).length === EVENTS ? r : null;
      },
      15_000,
      'every delivery to the broken receiver dead-lettered',
    );
    expect(rows).to.have.length(EVENTS * MAX_ATTEMPTS);
    expect(new Set(rows.map((r) => r.outcome))).to.deep.equal(new Set(['secret_unavailable']));
    expect(rows.filter((r) => r.attempt === MAX_ATTEMPTS).every((r) => r.dead_lettered)).to.equal(true);
    expect(await jobs(DEAD_LETTER_QUEUE, { receiverId: brokenId })).to.have.length(EVENTS);
    expect(broken.requests).to.have.length(0); // nothing unsigned or wrongly signed went out
    const warnings = logged.filter((l) => l.includes(WARNING));
    expect(warnings, warnings.join('\n')).to.have.length(1);
    expect(JSON.parse(warnings[0]!)).to.include({ receiverId: brokenId, level: 40 });
    // No per-delivery line above debug for these deliveries.
    expect(logged.filter((l) => l.includes(brokenId) && !l.includes(WARNING))).to.deep.equal([]);
  }

  it('a flipped ciphertext bit fails only that receiver: secret_unavailable attempts, retried, dead-lettered, one warning', async () => {
    const metricBefore = await metric('secret_unavailable');
    const good = await stack.addReceiver(healthy.url, { secret: 'healthy-secret-0123456789abcdef' });
    const bad = await stack.addReceiver(broken.url, { secret: 'broken-secret-0123456789abcdef' });
    void good;
    await testDb().pool.query(
      `update receiver set secret_ciphertext = set_byte(secret_ciphertext, 14, get_byte(secret_ciphertext, 14) # 1) where id = $1`,
      [bad.id],
    );
    const eventIds = await publish(EVENTS);
    await expectOnlyBrokenFails(bad.id, eventIds);
    // The last attempt of each delivery is counted as dead; the ones before as secret_unavailable.
    expect((await metric('secret_unavailable')) - metricBefore).to.equal(EVENTS * (MAX_ATTEMPTS - 1));

    const key = await createTestKey(['graphql:read']);
    const read = await graphql<{ deliveryAttempts: { outcome: string; statusCode: number | null }[] }>(
      stack.api,
      key,
      `
        query ($e: ID!, $r: ID!) {
          deliveryAttempts(eventId: $e, receiverId: $r) {
            outcome
            statusCode
          }
        }
      `,
      { e: eventIds[0], r: bad.id },
    );
    expect(read.body.errors).to.equal(undefined);
    expect(read.body.data!.deliveryAttempts).to.deep.equal([
      { outcome: 'SECRET_UNAVAILABLE', statusCode: null },
      { outcome: 'SECRET_UNAVAILABLE', statusCode: null },
    ]);
  });

  it('half-way through a key rotation, a worker holding only the old key fails only the receiver sealed under the new key; once restarted with both keys it delivers', async () => {
    const oldKey = Buffer.from(TEST_SECRET_KEY, 'base64'); // the stack's worker holds only this key
    const newKey = Buffer.alloc(32, 8);
    const rotated = createSecretKeyring({ current: newKey, previous: oldKey }); // an API process already restarted
    await stack.addReceiver(healthy.url, { secret: 'healthy-secret-0123456789abcdef' }); // sealed before the rotation
    const fresh = await addReceiver(
      { pool: testDb().pool, secrets: rotated, allowPrivateTargets: true },
      { url: broken.url, secret: 'sealed-new-key-0123456789abcdef' },
    );
    const eventIds = await publish(EVENTS);
    await expectOnlyBrokenFails(fresh.id, eventIds);

    // The rotation goes on: the worker restarts with the new key and the previous one.
    await stack.worker!.stop({ timeoutMs: 2000 });
    const restarted = await startDeliveryWorker({
      boss: stack.boss,
      pool: testDb().pool,
      config: stack.config,
      logger: createLogger({ level: 'info', destination: logSink }),
      secrets: rotated,
    });
    try {
      const [next] = await publish(1);
      const [received] = (await broken.waitFor(1, 10_000)).slice(-1);
      expect(received!.headers['x-service-event-id']).to.equal(next);
    } finally {
      await restarted.stop({ timeoutMs: 2000 });
    }
  });
});
