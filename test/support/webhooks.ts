// The webhook stack for tests: pg-boss on the suite's database, the API with the real fan-out and
// (unless told otherwise) a delivery worker, all with small timings.
import type { PgBoss } from 'pg-boss';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { loadConfig } from '../../src/kernel/config.ts';
import type { Database } from '../../src/app/database.ts';
import type { Logger } from '../../src/kernel/logger.ts';
import type { Api } from '../../src/app/service.ts';
import { createFanOut } from '../../src/webhooks/delivery/fan-out.ts';
import {
  BOSS_SCHEMA,
  DEAD_LETTER_QUEUE,
  type DeadLetterData,
  DELIVERY_QUEUE,
  startBoss,
  type WebhookConfig,
} from '../../src/webhooks/queue/boss.ts';
import { addReceiver, type ReceiverWithSecret } from '../../src/webhooks/receivers/receivers.ts';
import { createSecretKeyring } from '../../src/webhooks/secrets/secret-box.ts';
import { type DeliveryWorker, startDeliveryWorker } from '../../src/webhooks/delivery/worker.ts';
import { testDb } from '../hooks.ts';
import { silentLogger, startTestApi } from './api.ts';
import { buildLearningOpportunityInput } from './factories.ts';
import { startReceiver, type TestReceiver } from './receiver.ts';

/** The suite's SECRET_ENCRYPTION_KEY (also given to CLI child processes) and its keyring. */
export const TEST_SECRET_KEY = Buffer.alloc(32, 7).toString('base64');
export const testSecrets = createSecretKeyring({ current: Buffer.from(TEST_SECRET_KEY, 'base64') });

export function testWebhookConfig(overrides: Partial<WebhookConfig> = {}): WebhookConfig {
  return {
    ...loadConfig({}).webhooks,
    maxAttempts: 4,
    timeoutMs: 1000,
    backoffBaseMs: 50,
    backoffMaxMs: 400,
    allowPrivateTargets: true,
    concurrencyPerReceiver: 4,
    workerConcurrency: 32,
    pollIntervalMs: 200,
    disableAfterHours: 120,
    ...overrides,
  };
}

export type WebhookStack = {
  api: Api;
  boss: PgBoss;
  worker: DeliveryWorker | null;
  config: WebhookConfig;
  db: Database;
  addReceiver: (
    url: string,
    options?: { secret?: string; types?: string[]; scheme?: 'service-v1' | 'standard-webhooks' },
  ) => Promise<ReceiverWithSecret>;
  stop: () => Promise<void>;
};

export type WebhookStackOptions = {
  config?: Partial<WebhookConfig>;
  worker?: boolean;
  supervise?: boolean;
  logger?: Logger;
};

export async function startWebhookStack(options: WebhookStackOptions = {}): Promise<WebhookStack> {
  const db = testDb();
  const config = testWebhookConfig(options.config);
  const logger = options.logger ?? silentLogger;
  const boss = await startBoss({
    url: db.url,
    config,
    logger,
    supervise: options.supervise ?? options.worker !== false,
  });
  const worker =
    options.worker === false
      ? null
      : await startDeliveryWorker({ boss, pool: db.pool, config, logger, secrets: testSecrets });
  const api = await startTestApi({
    fanOut: createFanOut({ boss, orm: db.orm }),
    receivers: { boss, secrets: testSecrets, allowPrivateTargets: config.allowPrivateTargets },
    logger,
  });
  return {
    api,
    boss,
    worker,
    config,
    db,
    addReceiver: (url, o = {}) =>
      addReceiver(
        { pool: db.pool, secrets: testSecrets, allowPrivateTargets: config.allowPrivateTargets },
        { url, secret: o.secret, types: o.types, scheme: o.scheme },
      ),
    stop: async () => {
      await api.close();
      await worker?.stop({ timeoutMs: 2000 });
      await boss.stop({ graceful: false, close: true });
    },
  };
}

/**
 * The webhook stack of a describe block: registers a before hook that empties the webhook tables
 * (resetWebhooks) and starts the stack (startWebhookStack(options)), and an after hook that stops it.
 * Returns the stack, whose members the before hook fills in: use it in tests and in later hooks
 * (registered after this call, they run after it).
 */
export function useWebhookStack(options: WebhookStackOptions = {}): WebhookStack {
  const stack = {} as Partial<WebhookStack>;
  before(async () => {
    await resetWebhooks();
    Object.assign(stack, await startWebhookStack(options));
  });
  after(async () => {
    await stack.stop?.();
  });
  return stack as WebhookStack;
}

/** Removes every receiver (and their attempts), delivery job and dead letter of this test file's database. */
export async function resetWebhooks(db: Database = testDb()): Promise<void> {
  await db.pool.query('delete from receiver');
  const queues = await db.pool.query(
    `select 1 from information_schema.tables where table_schema = $1 and table_name = 'job'`,
    [BOSS_SCHEMA],
  );
  if (queues.rowCount)
    await db.pool.query(`delete from ${BOSS_SCHEMA}.job where name in ($1, $2)`, [DELIVERY_QUEUE, DEAD_LETTER_QUEUE]);
}

/** Jobs of a queue in the given states, for assertions on what is pending. */
export async function jobs(
  queue: string,
  filter: { eventId?: string; receiverId?: string } = {},
  db: Database = testDb(),
): Promise<{ state: string; data: Record<string, unknown> }[]> {
  const { rows } = await db.pool.query(
    `select state, data from ${BOSS_SCHEMA}.job where name = $1 and ($2::text is null or data->>'eventId' = $2) and ($3::text is null or data->>'receiverId' = $3) order by created_on`,
    [queue, filter.eventId ?? null, filter.receiverId ?? null],
  );
  return rows;
}

/** Event ids of a receiver's open deliveries: its jobs in the delivery queue and the deliveries waiting behind them in its lanes. */
export async function pendingDeliveries(receiverId: string, db: Database = testDb()): Promise<string[]> {
  const { rows } = await db.pool.query<{ id: string }>(
    `select data->>'eventId' as id from ${BOSS_SCHEMA}.job where name = $1 and state < 'completed' and data->>'receiverId' = $2
     union all select unnest(waiting)::text from delivery_lane where receiver_id = $2::uuid`,
    [DELIVERY_QUEUE, receiverId],
  );
  return rows.map((r) => r.id);
}

/**
 * What the queue holds for a receiver (its lanes, its jobs in both queues, its attempts), for the
 * message of a test that waited in vain for a delivery.
 */
export async function deliveryState(receiverId: string, db: Database = testDb()): Promise<string> {
  const [lanes, queued, attempts] = await Promise.all([
    db.pool.query(
      'select resource_id, head_job, head_event, waiting, queued_version, delivered_version, touched_at from delivery_lane where receiver_id = $1',
      [receiverId],
    ),
    db.pool.query(
      `select id, name, state, retry_count, priority, data, start_after, started_on from ${BOSS_SCHEMA}.job where data->>'receiverId' = $1 order by created_on`,
      [receiverId],
    ),
    db.pool.query(
      'select event_id, attempt, outcome, status_code, dead_lettered, started_at from delivery_attempt where receiver_id = $1 order by id',
      [receiverId],
    ),
  ]);
  return JSON.stringify({ lanes: lanes.rows, jobs: queued.rows, attempts: attempts.rows });
}

/** Polls `check` until it returns a truthy value (or fails after `timeoutMs`). */
export async function eventually<T>(
  check: () => Promise<T | null | undefined | false>,
  timeoutMs = 5000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * A bare event row (body '{}') for tests that need an event id to queue jobs against. It is no real
 * event: `removeBareEvent` deletes it (and its attempts) after the test, so the feed tests of a
 * serial run do not read it.
 */
/** A dead letter as pg-boss's own insert writes one (the service writes them in its settling and set-aside statements). */
export async function insertDeadLetter(boss: PgBoss, letter: DeadLetterData): Promise<void> {
  await boss.insert(DEAD_LETTER_QUEUE, [{ data: letter }]);
}

export async function insertBareEvent(db: Database = testDb()): Promise<string> {
  const sql = `insert into event (id, type, resource_id, occurred_at, body) select gen_random_uuid(), 'LEARNING_OPPORTUNITY_PUBLISHED', gen_random_uuid(), now(), '{}' returning id`;
  return (await db.pool.query<{ id: string }>(sql)).rows[0]!.id;
}

export async function removeBareEvent(eventId: string, db: Database = testDb()): Promise<void> {
  await db.pool.query('delete from delivery_attempt where event_id = $1', [eventId]);
  await db.pool.query('delete from event where id = $1', [eventId]);
}

/**
 * The webhook stack and test receiver of a file's tests: a fresh receiver (and empty webhook tables)
 * before each test, which starts its own stack (`world.stack = await startWebhookStack(...)`); both
 * stopped after it.
 */
export function webhookTestWorld(): { stack: WebhookStack | null; receiver: TestReceiver } {
  const world = { stack: null as WebhookStack | null, receiver: undefined as unknown as TestReceiver };
  beforeEach(async () => {
    await resetWebhooks();
    world.receiver = await startReceiver();
  });
  afterEach(async () => {
    await world.stack?.stop();
    world.stack = null;
    await world.receiver.close();
  });
  return world;
}

/** Publishes a new learning opportunity; the id of its LEARNING_OPPORTUNITY_PUBLISHED event. */
export async function publishOne(stack: WebhookStack): Promise<string> {
  const input = buildLearningOpportunityInput();
  await stack.api.writes.upsert(parseLearningOpportunityInput(input));
  await stack.api.writes.publish(input.id);
  return (await testDb().pool.query<{ id: string }>('select id from event where resource_id = $1', [input.id])).rows[0]!
    .id;
}
