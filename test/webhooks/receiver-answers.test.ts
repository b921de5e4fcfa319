// What a receiver answers cannot make the worker re-send: bytes PostgreSQL refuses in text (NUL) or
// that are not UTF-8 are stored sanitised, and one settlement that fails anyway does not roll back
// the others settled with it.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import {
  DELIVERY_QUEUE,
  type DeliveryJobData,
  enqueueDeliveries,
  fetchDeliveries,
} from '../../src/webhooks/queue/boss.ts';
import { createAttemptRecorder } from '../../src/webhooks/delivery/record-attempt.ts';
import { storedExcerpt } from '../../src/webhooks/delivery/send-webhook.ts';
import { silentLogger } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, jobs, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

describe('receiver answers the database cannot store as they are', () => {
  const stack = useWebhookStack();
  const receivers: TestReceiver[] = [];
  after(async () => {
    for (const r of receivers) await r.close();
  });

  it('stores NUL bytes and invalid UTF-8 sanitised: one delivery and one attempt row each, the batch settles', async () => {
    const answers: Record<string, Buffer> = {
      nul: Buffer.from('ok\0\0then\0more', 'latin1'),
      invalid: Buffer.from([0x6f, 0x6b, 0xff, 0xfe, 0xc3, 0x28, 0x20, 0xe2, 0x82]),
      plain: Buffer.from('accepted'),
    };
    const byName = new Map<string, { receiver: TestReceiver; id: string }>();
    for (const [name, body] of Object.entries(answers)) {
      const receiver = await startReceiver();
      receivers.push(receiver);
      receiver.reply({ status: 200, body });
      byName.set(name, { receiver, id: (await stack.addReceiver(receiver.url)).id });
    }
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    const eventId = (
      await testDb().pool.query<{ id: string }>('select id from event where resource_id = $1', [input.id])
    ).rows[0]!.id;

    const rows = await eventually(
      async () => {
        const { rows } = await testDb().pool.query<{ receiver_id: string; outcome: string; response_excerpt: string }>(
          'select receiver_id, outcome, response_excerpt from delivery_attempt where event_id = $1',
          [eventId],
        );
        return rows.length === 3 && rows;
      },
      5000,
      'an attempt row per receiver',
    );
    // Settled: no job is left that could be handed out again, so each receiver got it exactly once.
    expect(await jobs(DELIVERY_QUEUE, { eventId })).to.deep.equal([]);
    for (const [name, { receiver, id }] of byName) {
      expect(receiver.requests, name).to.have.length(1);
      const row = rows.find((r) => r.receiver_id === id)!;
      expect(row.outcome, name).to.equal('success');
      expect(row.response_excerpt, name).to.not.include('\0');
    }
    expect(rows.find((r) => r.receiver_id === byName.get('nul')!.id)!.response_excerpt).to.equal(
      'ok\uFFFD\uFFFDthen\uFFFDmore',
    );
    // Invalid sequences become U+FFFD; the character cut at the end (e2 82) is left out.
    expect(rows.find((r) => r.receiver_id === byName.get('invalid')!.id)!.response_excerpt).to.equal(
      'ok\uFFFD\uFFFD\uFFFD( ',
    );
  });

  it('keeps at most 512 bytes and never splits a character', () => {
    const text = storedExcerpt(Buffer.from('é'.repeat(300)));
    expect(Buffer.byteLength(text)).to.equal(512);
    expect(text).to.equal('é'.repeat(256));
    expect(Buffer.byteLength(storedExcerpt(Buffer.from(`a${'é'.repeat(300)}`)))).to.equal(511);
  });

  it('one settlement that fails does not roll back the others committed with it', async () => {
    const receiver = await startReceiver();
    receivers.push(receiver);
    const { id: receiverId } = await stack.addReceiver(receiver.url);
    const { rows: events } = await testDb().pool.query<{ id: string }>('select id from event limit 1');
    const eventId = events[0]!.id;
    const { boss, db } = stack;
    // Three claims of the same delivery queue; none is sent by the stack's worker (fetched here first).
    await stack.worker!.stop();
    await enqueueDeliveries(
      boss,
      boss.getDb(),
      [1, 2, 3].map((attempt) => ({ eventId, receiverId, attempt })),
    );
    const claimed = await fetchDeliveries(boss, { batchSize: 3, groupConcurrency: 100, ignoreGroups: [] });
    expect(claimed).to.have.length(3);
    const recorder = createAttemptRecorder({ pool: db.pool, config: stack.config, logger: silentLogger });
    const result = { outcome: 'success' as const, statusCode: 200, error: null, responseExcerpt: 'ok', durationMs: 3 };
    // attempt 0 breaks delivery_attempt's check constraint: that settlement fails, alone.
    const settle = (job: (typeof claimed)[number], data: DeliveryJobData) =>
      recorder.record({ job, data, startedAt: new Date(), result });
    const outcomes = await Promise.allSettled(
      claimed.map((job) => settle(job, job.data.attempt === 2 ? { ...job.data, attempt: 0 } : job.data)),
    );
    expect(outcomes.map((o) => o.status)).to.deep.equal(
      claimed.map((j) => (j.data.attempt === 2 ? 'rejected' : 'fulfilled')),
    );
    const { rows } = await db.pool.query<{ attempt: number }>(
      'select attempt from delivery_attempt where receiver_id = $1 order by attempt',
      [receiverId],
    );
    expect(rows.map((r) => r.attempt)).to.deep.equal([1, 3]);
    // The failed one is still claimed (handed out again when it expires); the others are gone.
    expect((await jobs(DELIVERY_QUEUE, { receiverId })).map((j) => [j.state, j.data.attempt])).to.deep.equal([
      ['active', 2],
    ]);
  });
});
