// Retention: rows backdated past the window are pruned by `npm run cli -- prune` and by the
// scheduled job; an event a dead letter still needs is kept (the worker sends its stored body); a
// cursor from before the pruned range gets 410 cursor-expired; the feed goes on from the watermark.
import { resolve } from 'node:path';
import { expect } from 'chai';
import { decodeCursor, type FeedPosition } from '../../src/feed/cursor.ts';
import { PRUNE_CRON, PRUNE_QUEUE, startRetentionJob } from '../../src/retention/prune-job.ts';
import { pruneRetention } from '../../src/retention/prune.ts';
import { BOSS_SCHEMA, DEAD_LETTER_QUEUE } from '../../src/webhooks/queue/boss.ts';
import { testDb } from '../hooks.ts';
import { getJson, createTestKey, silentLogger } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';
import { eventually, insertDeadLetter, resetWebhooks, useWebhookStack } from '../support/webhooks.ts';
import { collect, feed, head } from '../feed/feed-support.ts';
import { execFileChild } from '../support/child-processes.ts';

const CLI = resolve(import.meta.dirname, '../../src/cli/main.ts');

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFileChild(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, DATABASE_URL: testDb().url, LOG_LEVEL: 'warn' }, timeout: 60_000 },
      (error, stdout, stderr) =>
        done({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

const pool = () => testDb().pool;
const eventIdsOf = async (resourceId: string) =>
  (await pool().query<{ id: string }>('select id from event where resource_id = $1', [resourceId])).rows.map(
    (r) => r.id,
  );
const positionOf = async (eventId: string): Promise<FeedPosition> =>
  (
    await pool().query<FeedPosition>('select xid::text as xid, position::text as position from event where id = $1', [
      eventId,
    ])
  ).rows[0]!;

/** Moves every event up to `upTo` (feed order) and every attempt up to `attemptId` 40 days into the past. */
async function backdate(upTo: FeedPosition, attemptId = '0'): Promise<void> {
  await pool().query(
    `update event set occurred_at = occurred_at - interval '40 days' where (xid, position) <= ($1::xid8, $2::bigint)`,
    [upTo.xid, upTo.position],
  );
  await pool().query(`update delivery_attempt set started_at = started_at - interval '40 days' where id <= $1`, [
    attemptId,
  ]);
}

async function insertAttempt(eventId: string, receiverId: string): Promise<string> {
  const { rows } = await pool().query<{ id: string }>(
    `insert into delivery_attempt (event_id, receiver_id, attempt, started_at, duration_ms, status_code, outcome) values ($1, $2, 1, now(), 5, 500, 'http_error') returning id::text as id`,
    [eventId, receiverId],
  );
  return rows[0]!.id;
}

describe('retention prune', function () {
  this.timeout(60_000);
  const stack = useWebhookStack({ worker: false, supervise: true });
  let key: string;
  before(async () => {
    key = await createTestKey(['catalog:read']);
  });

  it('deletes old events and attempts in batches, keeps what a dead letter needs, and expires older cursors with 410', async () => {
    const { api } = stack;
    const before = await head(api, key);
    const [gone, dead, last] = [
      await createRecord(api.writes),
      await createRecord(api.writes),
      await createRecord(api.writes),
    ];
    const [goneEvent] = await eventIdsOf(gone.id);
    const [deadEvent] = await eventIdsOf(dead.id);
    const [lastEvent] = await eventIdsOf(last.id);
    // Readable (below the horizon) before pruning: the prune never passes the horizon.
    const { next: afterLast } = await collect(api, key, before, 3);
    const fresh = await createRecord(api.writes); // inside the window
    await collect(api, key, afterLast, 1);

    const receiver = await stack.addReceiver('http://127.0.0.1:9/hook');
    const goneAttempt = await insertAttempt(goneEvent!, receiver.id);
    const deadAttempt = await insertAttempt(deadEvent!, receiver.id);
    await stack.boss.getDb().executeSql('select 1'); // pg-boss is up: its job table exists
    await insertDeadLetter(stack.boss, { eventId: deadEvent!, receiverId: receiver.id, attempts: 1 });
    await backdate(await positionOf(lastEvent!), deadAttempt);

    const run = await cli('prune', '--json');
    expect(run.code, run.stderr).to.equal(0);
    const result = JSON.parse(run.stdout) as {
      events: number;
      eventsKept: number;
      deliveryAttempts: number;
      eventRetentionDays: number;
    };
    expect(result.events).to.be.at.least(2);
    expect(result.eventsKept).to.be.at.least(1);
    expect(result.deliveryAttempts).to.be.at.least(1);
    expect(result.eventRetentionDays).to.equal(30);

    expect(await eventIdsOf(gone.id), 'old event').to.deep.equal([]);
    expect(await eventIdsOf(last.id), 'old event').to.deep.equal([]);
    expect(await eventIdsOf(dead.id), 'kept for its dead letter').to.deep.equal([deadEvent]);
    expect(await eventIdsOf(fresh.id), 'inside the window').to.have.length(1);
    const attempts = await pool().query<{ id: string }>(
      'select id::text as id from delivery_attempt where id = any($1::bigint[])',
      [[goneAttempt, deadAttempt]],
    );
    expect(
      attempts.rows.map((r) => r.id),
      'the dead letter keeps its history',
    ).to.deep.equal([deadAttempt]);

    // A cursor from before the pruned range: 410, saying to start over from the head and a walk.
    const expired = await getJson(api, `/v1/events?after=${before}`, key);
    const problem = expectProblem(expired, 410);
    expect(problem.type).to.equal('/problems/cursor-expired');
    expect(problem.detail)
      .to.match(/head/)
      .and.match(/full walk/);
    // The cursor at the edge of the pruned range still works, and so does no cursor at all.
    const watermark = await pool().query<FeedPosition>(
      'select xid::text as xid, position::text as position from event_feed_pruned',
    );
    expect(watermark.rows[0], 'the watermark is the last pruned event, which was the head then').to.deep.equal(
      decodeCursor(afterLast),
    );
    const edge = await feed(api, key, { after: afterLast });
    expect(edge.results.map((e) => e.resource.id)).to.deep.equal([fresh.id]);
    const fromStart = await feed(api, key, { limit: 1000 });
    expect(fromStart.results[0]!.resource.id).to.equal(fresh.id);
    expect(fromStart.results.map((e) => e.id)).not.to.include(deadEvent);

    // Once the dead letter is gone (replayed and delivered, or removed), the next run deletes its event.
    await pool().query(`delete from ${BOSS_SCHEMA}.job where name = $1 and data->>'eventId' = $2`, [
      DEAD_LETTER_QUEUE,
      deadEvent,
    ]);
    const again = await cli('prune', '--json');
    expect(again.code, again.stderr).to.equal(0);
    expect(await eventIdsOf(dead.id)).to.deep.equal([]);
  });

  it('runs hourly as a pg-boss job on worker processes', async () => {
    const job = await startRetentionJob({
      boss: stack.boss,
      pool: pool(),
      retention: { eventDays: 30, deliveryAttemptDays: 30 },
      logger: silentLogger,
      pollingIntervalSeconds: 0.5,
    });
    try {
      const schedules = await stack.boss.getSchedules();
      expect(schedules.map((s) => [s.name, s.cron])).to.deep.include([PRUNE_QUEUE, PRUNE_CRON]);
      await resetWebhooks(); // no receiver: no delivery job holds the new event
      const start = await head(stack.api, key);
      const old = await createRecord(stack.api.writes);
      await collect(stack.api, key, start, 1);
      const [oldEvent] = await eventIdsOf(old.id);
      await backdate(await positionOf(oldEvent!));
      const id = await stack.boss.send(PRUNE_QUEUE, {}); // what the cron does each hour
      expect(id).to.be.a('string');
      await eventually(
        async () => (await eventIdsOf(old.id)).length === 0,
        15_000,
        'the job pruned the backdated event',
      );
    } finally {
      await job.stop();
    }
  });

  it('walks attempts by id as numbers: old ones past a power of ten are deleted too', async () => {
    // The head was ordered by the id as text ("100000000" before "99999995"), so the walk met an
    // attempt inside the window early and stopped, keeping old ones for ever (found from outside).
    await resetWebhooks();
    const { id: receiverId } = await stack.addReceiver('http://127.0.0.1:9/');
    const eventId = (await eventIdsOf((await createRecord(stack.api.writes)).id))[0]!;
    const ids = Array.from({ length: 11 }, (_, i) => 99_999_995 + i); // 99999995 .. 100000005
    await pool().query(
      `insert into delivery_attempt (id, event_id, receiver_id, attempt, started_at, duration_ms, status_code, outcome)
       select id, $2, $3, 1, now() - case when id < 100000005 then interval '40 days' else interval '0' end, 5, 500, 'http_error'
         from unnest($1::bigint[]) as u (id)`,
      [ids, eventId, receiverId],
    );
    const result = await pruneRetention(pool(), { eventDays: 0, deliveryAttemptDays: 30, batchSize: 4 });
    expect(result.deliveryAttempts).to.equal(10);
    const { rows } = await pool().query<{ id: string }>(
      'select id::text as id from delivery_attempt where receiver_id = $1 order by delivery_attempt.id',
      [receiverId],
    );
    expect(rows.map((r) => r.id)).to.deep.equal(['100000005']);
  });

  it('works in small batches, each up to the first row inside the window', async () => {
    await resetWebhooks();
    const start = await head(stack.api, key);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await createRecord(stack.api.writes)).id);
    await collect(stack.api, key, start, 7);
    const eventIds = (await Promise.all(ids.map(eventIdsOf))).flat();
    await backdate(await positionOf(eventIds[4]!)); // the first five are old, the last two are not
    const progress: number[] = [];
    const result = await pruneRetention(pool(), {
      eventDays: 30,
      deliveryAttemptDays: 30,
      batchSize: 2,
      onProgress: (p) => progress.push(p.events),
    });
    expect(result.batches).to.be.at.least(3);
    expect(progress.length).to.equal(result.batches);
    for (const id of ids.slice(0, 5)) expect(await eventIdsOf(id)).to.deep.equal([]);
    for (const id of ids.slice(5)) expect(await eventIdsOf(id)).to.have.length(1);
  });
});
