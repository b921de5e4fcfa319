// A worker that starts with a backlog knows nothing of its receivers yet, so each gets a small queue
// (receiver-queues.ts) and the first fetch finds room for a few of its jobs. The rest wait for the
// receiver's first answers, up to FIRST_ANSWERS_WAIT_MS (delivery/load-batch.ts): a fast receiver's
// queue then takes them all, and nothing goes back to the queue to be fetched and loaded again; a
// receiver that has not answered by then gets the rest handed back, as before. Hand-backs are counted
// by a trigger on pg-boss's job table (active -> created).
import { expect } from 'chai';
import { FIRST_ANSWERS_WAIT_MS } from '../../src/webhooks/delivery/load-batch.ts';
import { startDeliveryWorker, type DeliveryWorker } from '../../src/webhooks/delivery/worker.ts';
import { enqueueOrdered } from '../../src/webhooks/queue/lanes.ts';
import { BOSS_SCHEMA, type WebhookConfig } from '../../src/webhooks/queue/boss.ts';
import { silentLogger } from '../support/api.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import {
  insertBareEvent,
  resetWebhooks,
  startWebhookStack,
  testSecrets,
  type WebhookStack,
} from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

const BACKLOG = 40;

describe('a worker starting with a backlog', () => {
  let stack: WebhookStack;
  let receiver: TestReceiver;
  let worker: DeliveryWorker | null = null;

  before(async () => {
    const { pool } = testDb();
    await pool.query('create table if not exists test_hand_back (job_id uuid not null)');
    await pool.query(`create or replace function test_count_hand_back() returns trigger language plpgsql as $$
      begin insert into test_hand_back values (new.id); return new; end $$`);
  });
  beforeEach(async () => {
    await resetWebhooks();
    // The boss (and with it pg-boss's schema) first, then the trigger on its job table.
    stack = await startWebhookStack({ worker: false });
    const { pool } = testDb();
    await pool.query(`drop trigger if exists test_hand_back on ${BOSS_SCHEMA}.job`);
    await pool.query(`create trigger test_hand_back after update on ${BOSS_SCHEMA}.job for each row
      when (old.state = 'active' and new.state = 'created') execute function test_count_hand_back()`);
    await pool.query('delete from test_hand_back');
    receiver = await startReceiver();
  });
  afterEach(async () => {
    await worker?.stop({ timeoutMs: 2000 });
    worker = null;
    await stack.stop();
    await receiver.close();
    await testDb().pool.query(`drop trigger if exists test_hand_back on ${BOSS_SCHEMA}.job`);
  });

  /** `count` deliveries of distinct records to the receiver, queued while no worker runs; then a worker starts. */
  async function backlogThenStart(count: number, config: Partial<WebhookConfig>): Promise<void> {
    const { pool } = testDb();
    const { id: receiverId } = await stack.addReceiver(receiver.url);
    const events = await Promise.all(Array.from({ length: count }, () => insertBareEvent()));
    const { queued } = await enqueueOrdered(
      (text, values) => pool.query(text, values),
      events.map((eventId) => ({ eventId, receiverId })),
    );
    expect(queued).to.equal(count);
    worker = await startDeliveryWorker({
      boss: stack.boss,
      pool,
      config: { ...stack.config, ...config },
      logger: silentLogger,
      secrets: testSecrets,
    });
  }

  const handBacks = async () =>
    (await testDb().pool.query<{ n: number }>('select count(*)::int as n from test_hand_back')).rows[0]!.n;

  it('hands nothing back to a fast receiver: its first answers make room for the whole first fetch', async () => {
    // A send slower than the prefetch budget hands back what waits behind it (receiver-queues.ts); on
    // a loaded machine one did in a CI run: generous budget and timeout here, the queue for an
    // unknown receiver is 8 whatever they are.
    await backlogThenStart(BACKLOG, { timeoutMs: 15_000, prefetchBudgetMs: 5000 });
    await receiver.waitFor(BACKLOG, 10_000);
    expect(await handBacks()).to.equal(0);
  });

  it('hands back what a receiver that has not answered within the wait has no room for, and delivers it later', async () => {
    const slow = 16;
    receiver.reply({ status: 200, delayMs: FIRST_ANSWERS_WAIT_MS + 400 });
    await backlogThenStart(slow, { timeoutMs: 3000 });
    await receiver.waitFor(slow, 20_000);
    // Room for 8 (4 in flight, 4 queued) of the first fetch; the receiver's first answer comes after the wait.
    expect(await handBacks()).to.be.at.least(slow - 8);
    const ids = new Set(receiver.requests.map((r) => r.headers['x-service-event-id']));
    expect(ids.size, 'each delivery sent once').to.equal(slow);
  });
});
