// Receiver backpressure: a 429 or 503 with a valid Retry-After (delta-seconds or HTTP-date) is a
// `throttled` attempt: the delivery, and the receiver as a whole, wait that long; it counts neither
// toward the delivery's attempts nor toward automatic disabling, up to the throttle limits, past which
// it is a failure like any other. A missing or invalid Retry-After is a plain failed attempt, as before.
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HEADERS } from '@lods/receiver-kit';
import { silentLogger } from '../support/api.ts';
import { createTestKey, graphql } from '../support/api.ts';
import {
  countedAttempts,
  nextStep,
  parseRetryAfter,
  RETRY_AFTER_MAX_MS,
  RETRY_AFTER_MIN_MS,
  THROTTLE_LIMITS,
  withinThrottleLimits,
} from '../../src/webhooks/delivery/retry-policy.ts';
import { type DeliveryWorker, startDeliveryWorker } from '../../src/webhooks/delivery/worker.ts';
import { DEAD_LETTER_QUEUE, DELIVERY_QUEUE, enqueueDeliveries } from '../../src/webhooks/queue/boss.ts';
import { disableReceiver, enableReceiver, getReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { testDb } from '../hooks.ts';
import {
  deliveryState,
  eventually,
  insertBareEvent,
  jobs,
  publishOne,
  removeBareEvent,
  resetWebhooks,
  startWebhookStack,
  testSecrets,
  type WebhookStack,
} from '../support/webhooks.ts';

/** One request as the receiver saw it: which delivery, the how-many-th for that event, when, and the answer. */
type Hit = { eventId: string; nth: number; arrivedAt: number; answeredAt: number; status: number };
type Answer = { status: number; headers?: Record<string, string> };

/** Answers `first` to the receiver's first request, whatever its event, and 200 to every later one. */
function firstThen200(first: Answer): () => Answer {
  let answered = false;
  return () => {
    if (answered) return { status: 200 };
    answered = true;
    return first;
  };
}

/** A real receiver on 127.0.0.1 that answers per event and per attempt (`nth`, 1-based), with headers. */
async function startAnsweringReceiver(answer: (eventId: string, nth: number) => Answer) {
  const hits: Hit[] = [];
  const seen = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const arrivedAt = Date.now();
    req.resume();
    req.on('end', () => {
      const eventId = String(req.headers[HEADERS.eventId]);
      const nth = (seen.get(eventId) ?? 0) + 1;
      seen.set(eventId, nth);
      const { status, headers = {} } = answer(eventId, nth);
      res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(status === 200 ? 'ok' : 'wait');
      hits.push({ eventId, nth, arrivedAt, answeredAt: Date.now(), status });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
type AnsweringReceiver = Awaited<ReturnType<typeof startAnsweringReceiver>>;

type AttemptRow = {
  event_id: string;
  attempt: number;
  outcome: string;
  status_code: number | null;
  dead_lettered: boolean;
};
const attemptsOf = async (receiverId: string): Promise<AttemptRow[]> =>
  (
    await testDb().pool.query<AttemptRow>(
      'select event_id, attempt, outcome, status_code, dead_lettered from delivery_attempt where receiver_id = $1 order by id',
      [receiverId],
    )
  ).rows;
const receiverRow = async (id: string) =>
  (
    await testDb().pool.query<{
      enabled: boolean;
      disabled_at: string | null;
      failing_since: string | null;
      throttled_until: string | null;
    }>('select enabled, disabled_at, failing_since, throttled_until from receiver where id = $1', [id])
  ).rows[0]!;
const successes = async (receiverId: string) =>
  (await attemptsOf(receiverId)).filter((a) => a.outcome === 'success').map((a) => a.event_id);

/** eventually(), failing with what the queue holds for the receiver then (not when the wait began). */
async function settledFor(receiverId: string, check: () => Promise<boolean>, timeoutMs: number, what: string) {
  try {
    await eventually(check, timeoutMs, what);
  } catch (error) {
    throw new Error(`${(error as Error).message}: ${await deliveryState(receiverId)}`, { cause: error });
  }
}

/**
 * For every request that came after a throttling answer had been given (in arrival order), the time
 * between that answer and the request: none may come sooner than the wait asked for.
 */
function gapsAfterThrottling(hits: readonly Hit[]): number[] {
  const sorted = [...hits].sort((a, b) => a.arrivedAt - b.arrivedAt);
  const gaps: number[] = [];
  for (const [i, h] of sorted.entries()) {
    if (h.status === 200) continue;
    // The next request that was not already on its way when this answer was given.
    const next = sorted.slice(i + 1).find((n) => n.arrivedAt >= h.answeredAt);
    if (next) gaps.push(next.arrivedAt - h.answeredAt);
  }
  return gaps;
}

describe('receiver backpressure (429/503 with Retry-After)', function () {
  this.timeout(40_000);
  let stack: WebhookStack | null = null;
  let receiver: AnsweringReceiver | null = null;
  const extraWorkers: DeliveryWorker[] = [];

  beforeEach(() => resetWebhooks());
  afterEach(async () => {
    for (const w of extraWorkers.splice(0)) await w.stop({ timeoutMs: 2000 });
    await stack?.stop();
    stack = null;
    await receiver?.close();
    receiver = null;
  });

  it("waits out a 429 Retry-After: 2 on each delivery's first attempt: the receiver gets nothing for 2 s, nothing is dead-lettered or disabled, the attempt is THROTTLED", async () => {
    receiver = await startAnsweringReceiver((_, nth) =>
      nth === 1 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 },
    );
    // One request at a time to the receiver: "nothing for 2 s after a 429" then holds for the receiver
    // as a whole, not only for the delivery that got it (no request is already on the wire).
    stack = await startWebhookStack({ config: { concurrencyPerReceiver: 1, maxAttempts: 2 } });
    const { id } = await stack.addReceiver(receiver.url);
    const events = [await publishOne(stack), await publishOne(stack), await publishOne(stack)];

    await settledFor(id, async () => (await successes(id)).length === events.length, 25_000, 'all delivered');
    const hits = receiver.hits;
    expect(hits.filter((h) => h.status === 429)).to.have.length(events.length);
    // Each delivery: its next attempt at least ~2 s after its 429 (nothing sooner).
    for (const eventId of events) {
      const [first, second] = hits.filter((h) => h.eventId === eventId);
      expect(first!.status).to.equal(429);
      expect(second!.arrivedAt - first!.answeredAt, `retry of ${eventId}`).to.be.at.least(1800);
    }
    // The receiver as a whole: after each 429, nothing at all for ~2 s.
    const gaps = gapsAfterThrottling(hits);
    expect(gaps).to.have.length(events.length);
    for (const gap of gaps) expect(gap).to.be.at.least(1800);

    // Recorded as throttled, not counted: with maxAttempts 2, none was dead-lettered.
    const rows = await attemptsOf(id);
    for (const eventId of events)
      expect(
        rows.filter((r) => r.event_id === eventId).map((r) => [r.attempt, r.outcome, r.status_code]),
      ).to.deep.equal([
        [1, 'throttled', 429],
        [2, 'success', 200],
      ]);
    expect(rows.some((r) => r.dead_lettered)).to.equal(false);
    expect(await jobs(DEAD_LETTER_QUEUE, { receiverId: id })).to.deep.equal([]);
    expect(await receiverRow(id)).to.include({ enabled: true, disabled_at: null, failing_since: null });

    // The outcome as GraphQL (and the console's filter) name it.
    const key = await createTestKey(['graphql:read']);
    const response = await graphql<{ deliveryAttempts: { outcome: string; statusCode: number }[] }>(
      stack.api,
      key,
      'query($id: ID!) { deliveryAttempts(receiverId: $id, outcome: THROTTLED) { outcome statusCode } }',
      { id },
    );
    expect(response.body.errors).to.equal(undefined);
    expect(response.body.data!.deliveryAttempts).to.have.length(events.length);
    expect(response.body.data!.deliveryAttempts[0]).to.deep.equal({ outcome: 'THROTTLED', statusCode: 429 });
  });

  it('does not disable a receiver answering 503 with Retry-After far more often than the delivery has attempts, though failing past WEBHOOK_DISABLE_AFTER_HOURS', async () => {
    const THROTTLED_ANSWERS = 6;
    // Delta-seconds and HTTP-date in turn (a date has whole seconds: it asks for up to 1 s, at least 1 s is waited).
    receiver = await startAnsweringReceiver((_, nth) =>
      nth > THROTTLED_ANSWERS
        ? { status: 200 }
        : {
            status: 503,
            headers: { 'retry-after': nth % 2 ? '1' : new Date(Date.now() + 1000).toUTCString() },
          },
    );
    // maxAttempts 2 (6 answers are three times that), and the receiver failing for longer than
    // WEBHOOK_DISABLE_AFTER_HOURS already: any counted failure would disable it at once (see
    // auto-disable.test.ts), and the third would dead-letter the delivery.
    stack = await startWebhookStack({ config: { maxAttempts: 2, disableAfterHours: 120 } });
    const { id } = await stack.addReceiver(receiver.url);
    await testDb().pool.query(`update receiver set failing_since = now() - interval '200 hours' where id = $1`, [id]);
    const eventId = await publishOne(stack);

    await settledFor(id, async () => (await successes(id)).length === 1, 25_000, 'delivered');
    const rows = await attemptsOf(id);
    expect(rows.map((r) => r.outcome)).to.deep.equal([
      ...Array<string>(THROTTLED_ANSWERS).fill('throttled'),
      'success',
    ]);
    expect(rows.map((r) => r.attempt)).to.deep.equal([1, 2, 3, 4, 5, 6, 7]);
    expect(rows.every((r) => r.event_id === eventId && !r.dead_lettered)).to.equal(true);
    for (const gap of gapsAfterThrottling(receiver.hits)) expect(gap).to.be.at.least(900);
    expect(await jobs(DEAD_LETTER_QUEUE, { receiverId: id })).to.deep.equal([]);
    // Never disabled (disabled_at is set by any disable), and the success ended the failing streak.
    expect(await receiverRow(id)).to.include({ enabled: true, disabled_at: null, failing_since: null });
  });

  it('pauses the receiver as a whole: a delivery enqueued during the pause waits for its end', async () => {
    receiver = await startAnsweringReceiver(firstThen200({ status: 429, headers: { 'retry-after': '2' } }));
    stack = await startWebhookStack();
    const { id } = await stack.addReceiver(receiver.url);
    const a = await publishOne(stack);
    await eventually(async () => (await attemptsOf(id)).length === 1, 10_000, 'the throttled attempt');
    // Recorded with its attempt: the receiver's pause, about 2 s from now.
    expect((await receiverRow(id)).throttled_until).to.not.equal(null);
    const b = await publishOne(stack);
    // The new delivery's job starts no sooner than the pause ends.
    const { rows } = await testDb().pool.query<{ deferred: boolean; pause_ms: number }>(
      `select j.start_after >= r.throttled_until as deferred, extract(epoch from r.throttled_until - now()) * 1000 as pause_ms
         from pgboss.job j join receiver r on r.id = $3 where j.name = $1 and j.data->>'eventId' = $2`,
      [DELIVERY_QUEUE, b, id],
    );
    expect(rows).to.have.length(1);
    expect(rows[0]!.deferred).to.equal(true);
    // Some of the pause left (how much depends on how long the publish took), never more than asked.
    expect(Number(rows[0]!.pause_ms)).to.be.within(1, 2100);

    await settledFor(id, async () => (await successes(id)).length === 2, 15_000, 'delivered');
    const throttledAt = receiver.hits[0]!.answeredAt;
    const firstOfB = receiver.hits.find((h) => h.eventId === b)!;
    expect(firstOfB.arrivedAt - throttledAt).to.be.at.least(1800);
    expect(receiver.hits.filter((h) => h.eventId === a).map((h) => h.status)).to.deep.equal([429, 200]);
  });

  // docs/webhooks-sql.md: "To end a pause early ... update receiver set throttled_until = null". The
  // worker that got the answer held its own pause for the hour (found from outside).
  it('ends a pause early when an operator clears throttled_until: the next deliveries go out', async () => {
    receiver = await startAnsweringReceiver(firstThen200({ status: 503, headers: { 'retry-after': '3600' } }));
    stack = await startWebhookStack();
    const { id } = await stack.addReceiver(receiver.url);
    await publishOne(stack);
    await eventually(async () => (await attemptsOf(id)).length === 1, 10_000, 'the throttled attempt');
    expect((await receiverRow(id)).throttled_until).to.not.equal(null);
    await testDb().pool.query('update receiver set throttled_until = null where id = $1', [id]);
    const b = await publishOne(stack);
    // The worker trusts a pause's row once the pause is 5 s old, and looks at every poll.
    await settledFor(id, async () => (await successes(id)).includes(b), 15_000, 'the delivery after the pause ended');
    expect(receiver.hits.map((h) => h.status)).to.deep.equal([503, 200]);
  });

  // Found from outside: a receiver paused for an hour, disabled and enabled again, got its catch-up
  // an hour late (the catch-up's jobs were deferred by the old pause), and nothing showed the pause.
  it("ends a pause on the operator's enable: the deferred deliveries go at once, and the pause shows until then", async () => {
    receiver = await startAnsweringReceiver(firstThen200({ status: 503, headers: { 'retry-after': '3600' } }));
    stack = await startWebhookStack();
    const { id } = await stack.addReceiver(receiver.url);
    const a = await publishOne(stack);
    await eventually(async () => (await attemptsOf(id)).length === 1, 10_000, 'the throttled attempt');
    const paused = (await getReceiver({ pool: testDb().pool }, id))!.pausedUntil;
    expect(Date.parse(paused!) - Date.now()).to.be.within(3_500_000, 3_600_000);
    const b = await publishOne(stack);
    const enabled = await enableReceiver({ pool: testDb().pool }, id);
    expect(enabled).to.include({ wasEnabled: true, pauseEnded: true, pausedUntil: null });
    expect(enabled.resumedNow).to.be.at.least(1); // b's first delivery, and a's retry once it is queued
    await settledFor(
      id,
      async () => (await successes(id)).length === 2,
      15_000,
      'both deliveries after the pause ended',
    );
    expect((await successes(id)).sort()).to.deep.equal([a, b].sort());
  });

  it('delivers the catch-up of a receiver paused for an hour, disabled and enabled again, at once', async () => {
    receiver = await startAnsweringReceiver(firstThen200({ status: 429, headers: { 'retry-after': '3600' } }));
    stack = await startWebhookStack();
    const { id } = await stack.addReceiver(receiver.url);
    await publishOne(stack);
    await eventually(async () => (await attemptsOf(id)).length === 1, 10_000, 'the throttled attempt');
    await disableReceiver({ pool: testDb().pool }, id);
    const missed = [await publishOne(stack), await publishOne(stack)];
    const enabled = await enableReceiver({ pool: testDb().pool }, id);
    expect(enabled.catchUp?.total).to.be.at.least(2);
    await settledFor(
      id,
      async () => missed.every((e) => receiver!.hits.some((h) => h.eventId === e && h.status === 200)),
      15_000,
      'the catch-up at once',
    );
  });

  it("a worker that did not see the answer learns the pause from the receiver's row and defers the receiver's jobs", async () => {
    receiver = await startAnsweringReceiver(firstThen200({ status: 503, headers: { 'retry-after': '2' } }));
    stack = await startWebhookStack({ worker: false });
    const start = () =>
      startDeliveryWorker({
        boss: stack!.boss,
        pool: testDb().pool,
        config: stack!.config,
        logger: silentLogger,
        secrets: testSecrets,
      });
    const seeing = await start();
    const { id } = await stack.addReceiver(receiver.url);
    await publishOne(stack);
    await eventually(async () => (await attemptsOf(id)).length === 1, 10_000, 'the throttled attempt');
    await seeing.stop({ timeoutMs: 2000 });

    // Another worker, which knows nothing of the answer, and a job queued the plain pg-boss way (not
    // deferred by the enqueue): the worker fetches it, finds the pause in the receiver's row and
    // hands it back deferred instead of sending it.
    const other = await start();
    extraWorkers.push(other);
    const bare = await insertBareEvent();
    try {
      await enqueueDeliveries(stack.boss, stack.boss.getDb(), [{ eventId: bare, receiverId: id, attempt: 1 }]);
      await settledFor(id, async () => (await successes(id)).length === 2, 15_000, 'delivered');
      const throttledAt = receiver.hits[0]!.answeredAt;
      for (const h of receiver.hits.slice(1)) expect(h.arrivedAt - throttledAt).to.be.at.least(1800);
    } finally {
      await other.stop({ timeoutMs: 2000 });
      extraWorkers.length = 0;
      await removeBareEvent(bare);
    }
  });

  it('counts throttled answers past the throttle limits as failures: a receiver answering 429 for ever cannot hold a delivery', async () => {
    receiver = await startAnsweringReceiver(() => ({ status: 429, headers: { 'retry-after': '1' } }));
    stack = await startWebhookStack({ worker: false, config: { maxAttempts: 2 } });
    extraWorkers.push(
      await startDeliveryWorker({
        boss: stack.boss,
        pool: testDb().pool,
        config: stack.config,
        logger: silentLogger,
        secrets: testSecrets,
        throttleLimits: { maxAnswers: 2, maxWaitMs: 60_000 },
      }),
    );
    const { id } = await stack.addReceiver(receiver.url);
    await publishOne(stack);
    await settledFor(id, async () => (await attemptsOf(id)).some((a) => a.dead_lettered), 20_000, 'dead-lettered');
    // Two not counted, then two counted (maxAttempts 2): still waiting its Retry-After each time.
    expect((await attemptsOf(id)).map((a) => [a.attempt, a.outcome, a.dead_lettered])).to.deep.equal([
      [1, 'throttled', false],
      [2, 'throttled', false],
      [3, 'http_error', false],
      [4, 'http_error', true],
    ]);
    for (const gap of gapsAfterThrottling(receiver.hits)) expect(gap).to.be.at.least(900);
    expect((await jobs(DEAD_LETTER_QUEUE, { receiverId: id }))[0]!.data).to.include({ attempts: 4 });
    expect(await getReceiver({ pool: testDb().pool }, id)).to.include({ enabled: true });
  });

  it('treats a 429 or 503 without a valid Retry-After as a failed attempt, as before', async () => {
    receiver = await startAnsweringReceiver((_, nth) =>
      nth === 1 ? { status: 429 } : { status: 503, headers: { 'retry-after': 'in a while' } },
    );
    stack = await startWebhookStack({ config: { maxAttempts: 2 } });
    const { id } = await stack.addReceiver(receiver.url);
    await publishOne(stack);
    await eventually(async () => (await attemptsOf(id)).some((a) => a.dead_lettered), 10_000, 'dead-lettered');
    expect((await attemptsOf(id)).map((a) => [a.outcome, a.status_code])).to.deep.equal([
      ['http_error', 429],
      ['http_error', 503],
    ]);
    expect((await receiverRow(id)).throttled_until).to.equal(null);
  });
});

describe('backpressure policy (retry-policy.ts)', () => {
  const now = Date.UTC(2026, 11, 16, 12, 0, 0);
  const config = { maxAttempts: 3, backoffBaseMs: 100, backoffMaxMs: 1000 };

  it('reads Retry-After as delta-seconds or an HTTP-date, between 1 s and one hour; anything else is none', () => {
    expect(parseRetryAfter('2', now)).to.equal(2000);
    expect(parseRetryAfter(' 120 ', now)).to.equal(120_000);
    expect(parseRetryAfter('0', now)).to.equal(RETRY_AFTER_MIN_MS);
    expect(parseRetryAfter('86400', now)).to.equal(RETRY_AFTER_MAX_MS);
    expect(parseRetryAfter(new Date(now + 30_000).toUTCString(), now)).to.equal(30_000);
    expect(parseRetryAfter('Wed, 16 Dec 2026 12:00:10 GMT', now)).to.equal(10_000);
    expect(parseRetryAfter('Wednesday, 16-Dec-26 12:00:10 GMT', now)).to.equal(10_000);
    expect(parseRetryAfter('Wed Dec 16 12:00:10 2026', now)).to.equal(10_000);
    expect(parseRetryAfter(new Date(now - 60_000).toUTCString(), now)).to.equal(RETRY_AFTER_MIN_MS);
    expect(parseRetryAfter(new Date(now + 5 * 3_600_000).toUTCString(), now)).to.equal(RETRY_AFTER_MAX_MS);
    for (const invalid of [undefined, '', '-1', '1.5', 'soon', '2026-12-16T12:00:10Z', 'Wed, 99 Foo 2026'])
      expect(parseRetryAfter(invalid, now), String(invalid)).to.equal(null);
  });

  it('retries a throttled answer after its Retry-After without counting it; past the limits it is an http_error', () => {
    const data = { attempt: 5, throttled: 4, throttledMs: 4000 };
    expect(countedAttempts(data)).to.equal(1);
    expect(nextStep({ outcome: 'throttled', retryAfterMs: 2000 }, data, config)).to.deep.equal({
      kind: 'retry',
      delayMs: 2000,
      throttled: 5,
      throttledMs: 6000,
      lost: 0,
    });
    // An attempt lost with its worker is not counted either, and goes on to the next job.
    expect(countedAttempts({ ...data, lost: 1 })).to.equal(0);
    expect(nextStep({ outcome: 'http_error' }, { ...data, lost: 1 }, config)).to.deep.include({ lost: 1 });
    // A counted failure keeps the counts and waits at least what the receiver asked for.
    const failed = nextStep({ outcome: 'http_error', retryAfterMs: 5000 }, data, config);
    expect(failed).to.deep.include({ kind: 'retry', delayMs: 5000, throttled: 4, throttledMs: 4000 });
    expect(nextStep({ outcome: 'http_error' }, { attempt: 7, throttled: 4 }, config)).to.deep.equal({ kind: 'dead' });
    expect(nextStep({ outcome: 'http_error' }, { attempt: 6, throttled: 4 }, config).kind).to.equal('retry');

    const answer = { outcome: 'throttled', retryAfterMs: 1000 };
    const limits = { maxAnswers: 2, maxWaitMs: 10_000 };
    expect(withinThrottleLimits(answer, { throttled: 1, throttledMs: 1000 }, limits).outcome).to.equal('throttled');
    expect(withinThrottleLimits(answer, { throttled: 2, throttledMs: 2000 }, limits).outcome).to.equal('http_error');
    expect(withinThrottleLimits(answer, { throttled: 1, throttledMs: 9500 }, limits).outcome).to.equal('http_error');
    expect(withinThrottleLimits({ outcome: 'timeout' }, {}, limits).outcome).to.equal('timeout');
    expect(THROTTLE_LIMITS).to.deep.equal({ maxAnswers: 100, maxWaitMs: 24 * 3_600_000 });
  });
});
