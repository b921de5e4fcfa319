// The lane sweeper's statement (queue/lanes.ts SWEEP_SQL) over a backlog of busy lanes, on real
// PostgreSQL: each lane's head job must be looked up by its key whatever plan the statistics
// suggest. Planned as an anti join, statistics taken while the queue was nearly empty made it a
// nested loop that read every delivery job for every lane, and a backlog of a few thousand lanes
// ran every sweep into the statement timeout.
import { expect } from 'chai';
import { BOSS_SCHEMA, DELIVERY_QUEUE } from '../../src/webhooks/queue/boss.ts';
import { SWEEP_SQL, sweepLanes } from '../../src/webhooks/queue/lanes.ts';
import { resetWebhooks, startWebhookStack, type WebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

const LANES = 3000;
const HOUR_MS = 3_600_000;

describe('the lane sweep over a backlog', function () {
  this.timeout(60_000);
  let stack: WebhookStack | null = null;
  let receiverId: string;
  beforeEach(async () => {
    await resetWebhooks();
    stack = await startWebhookStack({ worker: false });
    ({ id: receiverId } = await stack.addReceiver('http://127.0.0.1:9/'));
    // LANES lanes untouched for two hours, each with its head job waiting in the queue.
    await testDb().pool.query(
      `with l as (
         insert into delivery_lane (receiver_id, resource_id, head_job, head_event, touched_at)
         select $1, gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), now() - interval '2 hours'
           from generate_series(1, $2) returning head_job)
       insert into ${BOSS_SCHEMA}.job (id, name, data) select head_job, $3, '{}' from l`,
      [receiverId, LANES, DELIVERY_QUEUE],
    );
  });
  afterEach(async () => {
    await stack?.stop();
    stack = null;
  });

  it('looks up each lane head job by its key, even where a nested loop is planned', async () => {
    const client = await testDb().pool.connect();
    try {
      await client.query('begin');
      // What stale statistics lead to: no hash or merge join.
      await client.query('set local enable_hashjoin = off');
      await client.query('set local enable_mergejoin = off');
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(`explain ${SWEEP_SQL}`, [HOUR_MS]);
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan, plan).to.match(/Index Cond: \(\(name = 'webhook-delivery'::text\) AND \(id = l\.head_job\)\)/);
      expect(plan, plan).not.to.match(/Join Filter: \(j\.id = l\.head_job\)/);
    } finally {
      await client.query('rollback');
      client.release();
    }
  });

  it('moves only the lanes whose head job is gone or finished', async () => {
    expect(await sweepLanes(testDb().pool, HOUR_MS), 'lanes moved while every head job waits').to.equal(0);
    // Ten heads vanish, ten end failed, ten are active: twenty lanes move on.
    await testDb().pool.query(
      `with lanes as (select head_job, row_number() over (order by resource_id) as n from delivery_lane where receiver_id = $1),
            gone as (delete from ${BOSS_SCHEMA}.job j using lanes l where j.name = $2 and j.id = l.head_job and l.n <= 10 returning 1)
       update ${BOSS_SCHEMA}.job j set state = case when l.n <= 20 then 'failed' else 'active' end::${BOSS_SCHEMA}.job_state
         from lanes l where j.name = $2 and j.id = l.head_job and l.n between 11 and 30`,
      [receiverId, DELIVERY_QUEUE],
    );
    expect(await sweepLanes(testDb().pool, HOUR_MS), 'lanes moved').to.equal(20);
    const { rows } = await testDb().pool.query<{ idle: number }>(
      'select count(*)::int as idle from delivery_lane where receiver_id = $1 and head_job is null',
      [receiverId],
    );
    expect(rows[0]!.idle, 'lanes gone idle (nothing was waiting behind their heads)').to.equal(20);
    expect(await sweepLanes(testDb().pool, 0), 'a second sweep, any age').to.equal(0);
  });
});
