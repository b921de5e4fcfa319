// webhooks/queue/ is the one room that names pg-boss's tables. These tests fail when pg-boss (an upgrade)
// moves a table, column, type or job state that its raw statements rely on, and they run each of
// its reads once on real pg-boss with answers a user would see (/metrics, /readyz, receiver counts,
// retention, dead letters). The statements of the delivery path (settling, handing claims back, the
// NOTIFY channel) are compared with pg-boss's own writes in boss-schema.test.ts.
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { expect } from 'chai';
import { BOSS_SCHEMA, enqueueDeliveries } from '../../src/webhooks/queue/boss.ts';
import { countDeadLetters, selectDeadLetters, takeDeadLetters } from '../../src/webhooks/queue/dead-letters.ts';
import { bossInstalled, openJobCounts, queueSchemaState } from '../../src/webhooks/queue/job-reads.ts';
import { deliveryCountsByReceiver, removeReceiverJobs } from '../../src/webhooks/queue/receiver-jobs.ts';
import { deadLetterDeliveries, eventsHeldByJobs } from '../../src/webhooks/queue/retention-holds.ts';
import { setAsideWaitingDeliveries } from '../../src/webhooks/queue/set-aside.ts';
import { testDb } from '../hooks.ts';
import { insertBareEvent, insertDeadLetter, removeBareEvent, useWebhookStack } from '../support/webhooks.ts';

// What webhooks/queue/'s statements read or write, by PostgreSQL type name (information_schema udt_name).
const EXPECTED_COLUMNS: Record<string, Record<string, string>> = {
  job: {
    id: 'uuid',
    name: 'text',
    data: 'jsonb',
    state: 'job_state',
    group_id: 'text',
    start_after: 'timestamptz',
    created_on: 'timestamptz',
    started_on: 'timestamptz',
    heartbeat_on: 'timestamptz',
    keep_until: 'timestamptz',
    retry_count: 'int4',
    retry_limit: 'int4',
    retry_delay: 'int4',
    retry_backoff: 'bool',
    retry_delay_max: 'int4',
    expire_seconds: 'int4',
    deletion_seconds: 'int4',
    heartbeat_seconds: 'int4',
    policy: 'text',
    dead_letter: 'text',
  },
  // Settling copies a queue's job settings from here into the follow-up job.
  queue: {
    name: 'text',
    retention_seconds: 'int4',
    expire_seconds: 'int4',
    deletion_seconds: 'int4',
    retry_limit: 'int4',
    retry_delay: 'int4',
    retry_backoff: 'bool',
    retry_delay_max: 'int4',
    heartbeat_seconds: 'int4',
    policy: 'text',
    dead_letter: 'text',
  },
  version: { version: 'int4' },
};

// `state < 'active'` means waiting (created or retry), and open jobs are created, retry or active:
// both rely on these states in this order.
const JOB_STATES = ['created', 'retry', 'active', 'completed', 'cancelled', 'failed'];

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => join(e.parentPath, e.name));
}

describe("pg-boss's schema as queue.ts relies on it", () => {
  // Real pg-boss: its start installs or migrates the schema these tests read.
  const stack = useWebhookStack({ worker: false });

  it('has every table, column, column type and job state that the raw statements name', async () => {
    const { rows } = await testDb().pool.query<{ table_name: string; column_name: string; udt_name: string }>(
      `select table_name, column_name, udt_name from information_schema.columns where table_schema = $1 and table_name = any($2::text[])`,
      [BOSS_SCHEMA, Object.keys(EXPECTED_COLUMNS)],
    );
    for (const [table, columns] of Object.entries(EXPECTED_COLUMNS)) {
      const actual = Object.fromEntries(
        rows.filter((r) => r.table_name === table).map((r) => [r.column_name, r.udt_name]),
      );
      const wanted = Object.fromEntries(Object.keys(columns).map((c) => [c, actual[c] ?? '(missing)']));
      expect(wanted, `${BOSS_SCHEMA}.${table}`).to.deep.equal(columns);
    }
    const states = await testDb().pool.query<{ states: string[] }>(
      `select enum_range(null::${BOSS_SCHEMA}.job_state)::text[] as states`,
    );
    expect(states.rows[0]!.states).to.deep.equal(JOB_STATES);
    const clock = await testDb().pool.query(`select pg_typeof(${BOSS_SCHEMA}.job_now())::text as type`);
    expect(clock.rows[0].type).to.equal('timestamp with time zone');
    // Partitioned by queue name: the counts read only the webhook queues' partitions.
    const kind = await testDb().pool.query(
      `select c.relkind from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and c.relname = 'job'`,
      [BOSS_SCHEMA],
    );
    expect(kind.rows[0]?.relkind).to.equal('p');
  });

  it('answers each read for retention, receivers, /metrics and /readyz, and the dead-letter statements, on real jobs', async () => {
    const pool = testDb().pool;
    const db = stack.boss.getDb();
    const receiverId = (await stack.addReceiver('http://127.0.0.1:9/unused')).id;
    const waiting = await insertBareEvent();
    const dead = await insertBareEvent();
    const free = await insertBareEvent();
    try {
      await enqueueDeliveries(stack.boss, db, [
        { eventId: waiting, receiverId, attempt: 1 },
        { eventId: waiting, receiverId, attempt: 2, delayMs: 60_000 },
      ]);
      await insertDeadLetter(stack.boss, { eventId: dead, receiverId, attempts: 4 });
      await pool.query(
        `insert into delivery_attempt (event_id, receiver_id, attempt, started_at, duration_ms, status_code, outcome, dead_lettered)
                        values ($1, $2, 4, now(), 5, 500, 'http_error', true), ($3, $2, 1, now(), 5, 200, 'success', false)`,
        [dead, receiverId, free],
      );

      expect(await bossInstalled(pool)).to.equal(true);
      expect(await queueSchemaState(pool, 1000)).to.equal('ready');
      expect(await openJobCounts(pool, 1000)).to.deep.equal({ deliveries: 2, deadLetters: 1 });

      expect(await deliveryCountsByReceiver(pool, receiverId)).to.deep.equal(
        new Map([[receiverId, { waiting: 2, dead: 1 }]]),
      );

      const held = await eventsHeldByJobs(pool, [waiting, dead, free]);
      expect([...held].sort()).to.deep.equal([waiting, dead].sort());
      const attempts = await pool.query<{ eventId: string; receiverId: string }>(
        'select event_id as "eventId", receiver_id as "receiverId" from delivery_attempt where receiver_id = $1',
        [receiverId],
      );
      const kept = await deadLetterDeliveries(pool, attempts.rows);
      expect([...kept].map((key) => key.split('/')[0])).to.deep.equal([dead]);

      expect(await countDeadLetters(pool, receiverId)).to.equal(1);
      const [letter] = await selectDeadLetters(pool, receiverId, 10);
      expect(letter).to.include({ eventId: dead, receiverId, attempts: 4, lastStatusCode: 500 });

      // The taking statements delete; each runs in a transaction that is rolled back.
      const client = await pool.connect();
      try {
        await client.query('begin');
        expect(await takeDeadLetters(client, receiverId, 10)).to.deep.equal([
          { eventId: dead, receiverId, attempts: 4, reason: null },
        ]);
        // The two waiting deliveries (attempts 1 and 2) become dead letters after 0 and 1 attempts.
        expect(await setAsideWaitingDeliveries(client, [receiverId])).to.equal(2);
        expect(await takeDeadLetters(client, receiverId, 10)).to.have.deep.members([
          { eventId: waiting, receiverId, attempts: 0, reason: 'receiver_disabled' },
          { eventId: waiting, receiverId, attempts: 1, reason: 'receiver_disabled' },
        ]);
      } finally {
        await client.query('rollback');
        client.release();
      }

      expect(await removeReceiverJobs(db, receiverId)).to.equal(3);
      expect(await openJobCounts(pool, 1000)).to.deep.equal({ deliveries: 0, deadLetters: 0 });
    } finally {
      for (const id of [waiting, dead, free]) await removeBareEvent(id);
    }
  });

  it('is named by no module of src/ but those of webhooks/queue/', async () => {
    const src = resolve(import.meta.dirname, '../../src');
    const naming: string[] = [];
    for (const file of await sourceFiles(src)) {
      if (relative(src, file).startsWith(join('webhooks', 'queue') + '/')) continue;
      if (/BOSS_SCHEMA|pgboss\.|pg-boss\/dist/.test(await readFile(file, 'utf8'))) naming.push(relative(src, file));
    }
    expect(naming).to.deep.equal([]);
  });
});
