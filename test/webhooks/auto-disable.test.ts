// Automatic disabling: a 410 Gone disables at once; nothing but failures for
// WEBHOOK_DISABLE_AFTER_HOURS disables; a success or `enable` restarts the clock. Waiting deliveries
// become dead letters, the reason shows in `receivers list`, the counter in /metrics.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { deliveryAttempts, receiversDisabled } from '../../src/kernel/metrics.ts';
import {
  DEAD_LETTER_QUEUE,
  DELIVERY_QUEUE,
  enqueueDeliveries,
  fetchDeliveries,
} from '../../src/webhooks/queue/boss.ts';
import { settleJobs } from '../../src/webhooks/queue/settle-jobs.ts';
import { enableReceiver, getReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import {
  eventually,
  insertBareEvent,
  jobs,
  removeBareEvent,
  resetWebhooks,
  startWebhookStack,
  type WebhookStack,
} from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

const disabledCount = async (reason: string) =>
  (await receiversDisabled.get()).values.find((v) => v.labels.reason === reason)?.value ?? 0;
const attemptsCounted = async (outcome: string) =>
  (await deliveryAttempts.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
const attempts = async (receiverId: string) =>
  Number(
    (await testDb().pool.query('select count(*) as n from delivery_attempt where receiver_id = $1', [receiverId]))
      .rows[0].n,
  );

describe('automatic disabling of failing receivers', function () {
  this.timeout(20_000);
  let stack: WebhookStack;
  let receiver: TestReceiver;
  beforeEach(async () => {
    await resetWebhooks();
    // A long backoff: a failed delivery waits for its retry, so that disabling has something to set aside.
    stack = await startWebhookStack({
      config: { maxAttempts: 5, backoffBaseMs: 60_000, backoffMaxMs: 60_000, disableAfterHours: 120 },
    });
    receiver = await startReceiver();
  });
  afterEach(async () => {
    await stack.stop();
    await receiver.close();
  });

  async function publish(): Promise<void> {
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
  }
  const disabled = (id: string) =>
    eventually(
      async () =>
        (await getReceiver({ pool: testDb().pool }, id))?.enabled === false
          ? await getReceiver({ pool: testDb().pool }, id)
          : null,
      20_000,
      'disabled',
    );

  /** The dead_lettered flags of a receiver's attempt rows, in attempt order. */
  const deadLetteredFlags = async (receiverId: string) =>
    (
      await testDb().pool.query<{ dead_lettered: boolean }>(
        'select dead_lettered from delivery_attempt where receiver_id = $1 order by attempt, started_at',
        [receiverId],
      )
    ).rows.map((r) => r.dead_lettered);

  it('disables at once on 410 Gone; its waiting retry becomes a dead letter; counted and listed', async () => {
    const before = await disabledCount('gone');
    const [deadBefore, httpErrorsBefore] = [await attemptsCounted('dead'), await attemptsCounted('http_error')];
    receiver.reply({ status: 410 });
    const { id } = await stack.addReceiver(receiver.url);
    await publish();
    const info = await disabled(id);
    expect(info).to.include({ enabled: false, disabledReason: 'gone', waitingDeliveries: 0, deadDeliveries: 1 });
    expect(info!.disabledAt).to.be.a('string');
    expect(await jobs(DELIVERY_QUEUE, { receiverId: id })).to.deep.equal([]);
    expect((await jobs(DEAD_LETTER_QUEUE, { receiverId: id }))[0]!.data).to.include({
      reason: 'receiver_disabled',
      attempts: 1,
    });
    expect(await disabledCount('gone')).to.equal(before + 1);
    // The attempt is counted as the delivery's end (dead), not as a failure with a retry to come.
    await eventually(async () => (await attemptsCounted('dead')) === deadBefore + 1, 2000, 'counted dead');
    expect(await attemptsCounted('http_error')).to.equal(httpErrorsBefore);
    // Its attempt row says so too (the console's and the SQL recipes' "dead-lettered").
    expect(await deadLetteredFlags(id)).to.deep.equal([true]);
    await publish(); // a disabled receiver gets no new deliveries
    expect(receiver.requests).to.have.length(1);
  });

  it('disables a receiver whose every attempt failed for WEBHOOK_DISABLE_AFTER_HOURS, not one short of it', async () => {
    receiver.reply({ status: 503 });
    const [long, short] = [await stack.addReceiver(receiver.url), await stack.addReceiver(`${receiver.url}?short`)];
    // Failing (with no success since) for 121 and for 119 hours already.
    await testDb().pool.query(
      `update receiver set failing_since = now() - (case when id = $1 then '121 hours' else '119 hours' end)::interval where id in ($1, $2)`,
      [long.id, short.id],
    );
    const before = await disabledCount('failing');
    await publish();
    expect(await disabled(long.id)).to.include({ disabledReason: 'failing', deadDeliveries: 1 });
    expect(await deadLetteredFlags(long.id)).to.deep.equal([true]);
    await eventually(async () => (await attempts(short.id)) === 1, 20_000, 'the other attempt');
    expect(await getReceiver({ pool: testDb().pool }, short.id)).to.include({
      enabled: true,
      disabledReason: null,
      waitingDeliveries: 1,
    });
    expect(await disabledCount('failing')).to.equal(before + 1);
  });

  it('restarts the clock on enable (one failure does not disable again) and on a success', async () => {
    receiver.reply({ status: 503 });
    const { id } = await stack.addReceiver(receiver.url);
    await testDb().pool.query(`update receiver set failing_since = now() - interval '200 hours' where id = $1`, [id]);
    await publish();
    await disabled(id);
    // The enable's catch-up sends the record whose delivery was set aside (webhooks/catch-up/): a
    // failure after enable, as is the next change's.
    await enableReceiver({ pool: testDb().pool }, id);
    // Failed attempts are retried within 50-400 ms here: count at least, not exactly (a loaded run
    // polled past the moment there were exactly two).
    await eventually(async () => (await attempts(id)) >= 2, 20_000, 'the catch-up attempt');
    const afterCatchUp = await attempts(id);
    await publish();
    await eventually(async () => (await attempts(id)) > afterCatchUp, 20_000, 'the attempt after enable');
    // Health is written by the statement that records the attempt: visible with it.
    const health = async () =>
      (
        await testDb().pool.query('select enabled, failing_since is not null as failing from receiver where id = $1', [
          id,
        ])
      ).rows[0];
    expect(await health()).to.deep.equal({ enabled: true, failing: true });

    receiver.reply({ status: 200 });
    await publish();
    const successes = async () =>
      Number(
        (
          await testDb().pool.query(
            `select count(*) as n from delivery_attempt where receiver_id = $1 and outcome = 'success'`,
            [id],
          )
        ).rows[0].n,
      );
    await eventually(async () => (await successes()) > 0, 20_000, 'a successful attempt');
    const healed = async () =>
      (
        await testDb().pool.query(
          'select failing_since, last_success_at is not null as ok from receiver where id = $1',
          [id],
        )
      ).rows[0];
    expect(await healed()).to.deep.equal({ failing_since: null, ok: true });
  });

  it('never disables for failures with WEBHOOK_DISABLE_AFTER_HOURS=0', async () => {
    await stack.stop();
    stack = await startWebhookStack({
      config: { maxAttempts: 5, backoffBaseMs: 60_000, backoffMaxMs: 60_000, disableAfterHours: 0 },
    });
    receiver.reply({ status: 500 });
    const { id } = await stack.addReceiver(receiver.url);
    await testDb().pool.query(`update receiver set failing_since = now() - interval '10000 hours' where id = $1`, [id]);
    await publish();
    await eventually(async () => (await attempts(id)) === 1, 20_000, 'an attempt');
    expect(await getReceiver({ pool: testDb().pool }, id)).to.include({ enabled: true, lastSuccessAt: null });
  });

  describe('the settling statement', () => {
    let id: string;
    let eventId: string;
    beforeEach(async () => {
      await stack.stop();
      stack = await startWebhookStack({ worker: false });
      id = (await stack.addReceiver(receiver.url)).id;
      eventId = await insertBareEvent();
    });
    afterEach(() => removeBareEvent(eventId));

    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, s * 1000));
    // One settling statement for a group of claimed jobs, each with its attempt's start (seconds) and status.
    const settle = async (attempts: [number, number][]) => {
      await enqueueDeliveries(
        stack.boss,
        stack.boss.getDb(),
        attempts.map(() => ({ eventId, receiverId: id, attempt: 1 })),
      );
      const claimed = await fetchDeliveries(stack.boss, {
        batchSize: attempts.length,
        groupConcurrency: 100,
        ignoreGroups: [],
      });
      expect(claimed).to.have.length(attempts.length);
      return await settleJobs(
        testDb().pool,
        claimed.map((job, i) => {
          const [second, statusCode] = attempts[i]!;
          const outcome = statusCode < 300 ? 'success' : 'http_error';
          return {
            job,
            data: job.data,
            attempt: { startedAt: at(second), durationMs: 1, statusCode, error: null, excerpt: null, outcome },
            next: { kind: 'done' },
          };
        }),
        { disableAfterHours: 120 },
      );
    };
    const state = async () =>
      // Seconds after the origin of at().
      (
        await testDb().pool.query(
          `select enabled, ${['failing_since', 'last_success_at', 'last_failure_at'].map((c, i) => `extract(epoch from ${c} - '2026-01-01Z')::float8 as "${['failingSince', 'lastSuccessAt', 'lastFailureAt'][i]}"`).join(', ')} from receiver where id = $1`,
          [id],
        )
      ).rows[0];

    it('orders the attempts of one group: only failures after its last success count', async () => {
      expect(
        (
          await settle([
            [1, 500],
            [2, 200],
            [3, 503],
            [4, 500],
          ])
        ).disabled,
      ).to.deep.equal([]);
      expect(await state()).to.deep.equal({ enabled: true, failingSince: 3, lastSuccessAt: 2, lastFailureAt: 4 });
      await settle([
        [5, 500],
        [6, 204],
      ]);
      expect(await state()).to.deep.include({ enabled: true, failingSince: null, lastSuccessAt: 6, lastFailureAt: 5 });
      const { disabled } = await settle([
        [9, 200],
        [10, 410],
      ]);
      expect(await state()).to.deep.include({ enabled: false, failingSince: 10 });
      expect(disabled).to.deep.equal([
        {
          id,
          reason: 'gone',
          failingSince: (await testDb().pool.query('select failing_since::text as t from receiver where id = $1', [id]))
            .rows[0].t,
        },
      ]);
    });

    it('a 410 disables even when a success that started after it settles in the same group (found from outside: grouping decided)', async () => {
      const { disabled } = await settle([
        [7, 410],
        [8, 200],
      ]);
      expect(disabled).to.deep.equal([{ id, reason: 'gone', failingSince: null }]);
      expect(await state()).to.deep.include({ enabled: false, failingSince: null, lastSuccessAt: 8 });
    });

    it('disables, and moves the waiting deliveries of the receiver to the dead letters, in the statement that records the 410', async () => {
      // A delivery waiting for its third attempt, and another receiver's, which stays.
      const other = (await stack.addReceiver(`${receiver.url}?other`)).id;
      await enqueueDeliveries(stack.boss, stack.boss.getDb(), [
        { eventId, receiverId: id, attempt: 3, delayMs: 60_000 },
        { eventId, receiverId: other, attempt: 1, delayMs: 60_000 },
      ]);
      const result = await settle([[1, 410]]);
      expect(result).to.deep.include({ setAside: 1 });
      expect(result.disabled.map((d) => [d.id, d.reason])).to.deep.equal([[id, 'gone']]);
      expect(await jobs(DELIVERY_QUEUE, { receiverId: id })).to.deep.equal([]);
      expect((await jobs(DEAD_LETTER_QUEUE, { receiverId: id })).map((j) => j.data)).to.deep.equal([
        { eventId, receiverId: id, attempts: 2, reason: 'receiver_disabled' },
      ]);
      expect((await jobs(DELIVERY_QUEUE, { receiverId: other })).map((j) => j.state)).to.deep.equal(['created']);
    });

    it("keeps a healthy receiver's last success to within a second, and any failure at once", async () => {
      await settle([[20, 200]]);
      await settle([[20.5, 200]]);
      expect(await state()).to.deep.include({ lastSuccessAt: 20, failingSince: null });
      await settle([[21, 200]]);
      expect(await state()).to.deep.include({ lastSuccessAt: 21 });
      await settle([[21.2, 500]]);
      expect(await state()).to.deep.include({ lastSuccessAt: 21, failingSince: 21.2, lastFailureAt: 21.2 });
      // A failing receiver's next success is written however soon it comes.
      await settle([[21.3, 200]]);
      expect(await state()).to.deep.include({ lastSuccessAt: 21.3, failingSince: null });
    });
  });
});
