// webhooks/queue/ writes pgboss.job with its own statements where pg-boss's API takes more round trips or
// has no call (settling with the attempt row, handing claims back, the NOTIFY channel). These tests
// fail when pg-boss's schema or behaviour moves away from what those statements assume.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import {
  BOSS_SCHEMA,
  DEAD_LETTER_QUEUE,
  DELIVERY_QUEUE,
  enqueueDeliveries,
  fetchDeliveries,
  handBackJobs,
  listenForDeliveries,
} from '../../src/webhooks/queue/boss.ts';
import { enqueueOrdered } from '../../src/webhooks/queue/lanes.ts';
import { settleJobs } from '../../src/webhooks/queue/settle-jobs.ts';
import { insertBareEvent, jobs, removeBareEvent, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

// Columns that differ between any two jobs, or that the settlement sets on purpose.
const PER_JOB = ['id', 'data', 'created_on', 'start_after', 'keep_until'];

describe('pg-boss statements of queue.ts against pg-boss schema', () => {
  const stack = useWebhookStack({ worker: false });
  let receiverId: string;
  let eventId: string;
  before(async () => {
    receiverId = (await stack.addReceiver('http://127.0.0.1:9/unused')).id;
    eventId = await insertBareEvent();
  });
  after(async () => {
    await removeBareEvent(eventId);
  });

  const row = async (queue: string, attempt: number, key: 'attempt' | 'attempts') =>
    (
      await testDb().pool.query(
        `select to_jsonb(j) as j from ${BOSS_SCHEMA}.job j where name = $1 and (data->>'${key}')::int = $2`,
        [queue, attempt],
      )
    ).rows.map((r) => r.j);
  const strip = (job: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(job).filter(([k]) => !PER_JOB.includes(k)));
  const claim = async () =>
    (await fetchDeliveries(stack.boss, { batchSize: 10, groupConcurrency: 10, ignoreGroups: [] }))[0]!;

  it('writes a retry and a dead letter exactly as boss.insert() writes a job of that queue', async () => {
    const db = stack.boss.getDb();
    await enqueueDeliveries(stack.boss, db, [{ eventId, receiverId, attempt: 1 }]);
    const first = await claim();
    const attempt = {
      startedAt: new Date(),
      durationMs: 5,
      statusCode: 500,
      error: null,
      excerpt: 'no',
      outcome: 'http_error',
    };
    expect(
      (
        await settleJobs(testDb().pool, [
          { job: first, data: first.data, attempt, next: { kind: 'retry', delayMs: 60_000 } },
        ])
      ).outcomes,
    ).to.deep.equal([{ held: true, receiverExists: true, receiverEnabled: true }]);
    await enqueueDeliveries(stack.boss, db, [{ eventId, receiverId, attempt: 7, delayMs: 60_000 }]);
    const [ours] = await row(DELIVERY_QUEUE, 2, 'attempt');
    const [theirs] = await row(DELIVERY_QUEUE, 7, 'attempt');
    expect(ours.data).to.deep.equal({ eventId, receiverId, attempt: 2 });
    expect(strip(ours)).to.deep.equal(strip(theirs));

    await stack.boss.insert(DEAD_LETTER_QUEUE, [{ data: { eventId, receiverId, attempts: 9 } }], { db });
    await testDb().pool.query(`update ${BOSS_SCHEMA}.job set start_after = now() where name = $1`, [DELIVERY_QUEUE]);
    const second = (await fetchDeliveries(stack.boss, { batchSize: 10, groupConcurrency: 10, ignoreGroups: [] })).find(
      (j) => j.data.attempt === 2,
    )!;
    await settleJobs(testDb().pool, [{ job: second, data: second.data, attempt, next: { kind: 'dead' } }]);
    const [dead] = await row(DEAD_LETTER_QUEUE, 2, 'attempts');
    const [inserted] = await row(DEAD_LETTER_QUEUE, 9, 'attempts');
    expect(dead.data).to.deep.equal({ eventId, receiverId, attempts: 2 });
    expect(strip(dead)).to.deep.equal(strip(inserted));
  });

  it('settles only the claim it fetched (a job handed out again is not ours), and hands claims back uncounted', async () => {
    await testDb().pool.query(`delete from ${BOSS_SCHEMA}.job where name = $1`, [DELIVERY_QUEUE]);
    await enqueueDeliveries(stack.boss, stack.boss.getDb(), [{ eventId, receiverId, attempt: 1 }]);
    const job = await claim();
    await handBackJobs(stack.boss, [job.id]);
    const again = await claim();
    expect([again.id, again.retryCount]).to.deep.equal([job.id, 0]);
    const stale = { ...again, retryCount: 1 };
    expect(
      (await settleJobs(testDb().pool, [{ job: stale, data: again.data, attempt: null, next: { kind: 'done' } }]))
        .outcomes,
    ).to.deep.equal([{ held: false, receiverExists: true, receiverEnabled: true }]);
    expect(
      (await settleJobs(testDb().pool, [{ job: again, data: again.data, attempt: null, next: { kind: 'done' } }]))
        .outcomes,
    ).to.deep.equal([{ held: true, receiverExists: true, receiverEnabled: true }]);
  });

  it("moves a lane's settled job on to its next event as the settler's claim, and a stale settlement of the earlier delivery is not ours", async () => {
    const { pool } = testDb();
    await pool.query(`delete from ${BOSS_SCHEMA}.job where name = $1`, [DELIVERY_QUEUE]);
    const resourceId = randomUUID();
    const [first, second] = [randomUUID(), randomUUID()];
    await pool.query(
      `insert into event (id, type, resource_id, occurred_at, body, version)
       values ($1, 'LEARNING_OPPORTUNITY_UPDATED', $3, now(), '{}', 1), ($2, 'LEARNING_OPPORTUNITY_UPDATED', $3, now(), '{}', 2)`,
      [first, second, resourceId],
    );
    try {
      await enqueueOrdered(
        (text, values) => pool.query(text, values),
        [first, second].map((id) => ({ eventId: id, receiverId })),
      );
      const head = await claim();
      expect(head.data).to.deep.equal({ eventId: first, receiverId, attempt: 1 });
      const settled = await settleJobs(pool, [{ job: head, data: head.data, attempt: null, next: { kind: 'done' } }], {
        claim: true,
      });
      expect(settled.outcomes).to.deep.equal([{ held: true, receiverExists: true, receiverEnabled: true }]);
      const [next] = settled.claimed.jobs;
      // The same job, still active, now carrying the second event.
      expect([next!.id, next!.data]).to.deep.equal([head.id, { eventId: second, receiverId, attempt: 1, step: 1 }]);
      expect(await jobs(DELIVERY_QUEUE)).to.deep.equal([{ state: 'active', data: next!.data }]);
      // The first delivery settled again (a worker that lost its claim and never knew): same id, same
      // retry count, but not the step the job is at.
      expect(
        (await settleJobs(pool, [{ job: head, data: head.data, attempt: null, next: { kind: 'done' } }])).outcomes,
      ).to.deep.equal([{ held: false, receiverExists: true, receiverEnabled: true }]);
      expect(await jobs(DELIVERY_QUEUE)).to.have.length(1);
      expect(
        (await settleJobs(pool, [{ job: next!, data: next!.data, attempt: null, next: { kind: 'done' } }])).outcomes,
      ).to.deep.equal([{ held: true, receiverExists: true, receiverEnabled: true }]);
      expect(await jobs(DELIVERY_QUEUE)).to.deep.equal([]);
    } finally {
      await pool.query('delete from delivery_lane where resource_id = $1', [resourceId]);
      await pool.query('delete from event where id = any($1::uuid[])', [[first, second]]);
    }
  });

  it('hears pg-boss announce a new delivery job on the channel it derives', async () => {
    let heard!: () => void;
    const notified = new Promise<void>((resolve) => (heard = resolve));
    const listener = await listenForDeliveries(stack.boss, () => heard());
    try {
      expect(listener).to.not.equal(null);
      await enqueueDeliveries(stack.boss, stack.boss.getDb(), [{ eventId, receiverId, attempt: 1 }]);
      await notified;
    } finally {
      await listener?.close();
    }
  });
});
