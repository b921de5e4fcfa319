// "Send test event" (docs/console.md): a WEBHOOK_TEST delivery to one receiver only, whatever
// its subscription, signed and recorded like any delivery, never in the change feed; the same
// through GraphQL (sendTestWebhookEvent) and the command line (receivers test ID); the receiver kit
// acknowledges it without handing it to `process`.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deliveryHeaders, verifyDelivery, webhookReceiver } from '@lods/receiver-kit';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { pruneRetention } from '../../src/retention/prune.ts';
import { listStoredEvents } from '../../src/webhooks/delivery/attempt-reads.ts';
import { redeliverEvent } from '../../src/webhooks/delivery/redeliver.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, graphql } from '../support/api.ts';
import { cli, json } from '../support/cli.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, useWebhookStack } from '../support/webhooks.ts';
import { collect, head } from '../feed/feed-support.ts';

const SECRET = 'test-event-secret-0123456789abcdef';
const SEND = `mutation($id: ID!) { sendTestWebhookEvent(receiverId: $id) { eventId eventType receiverId occurredAt } }`;
const ATTEMPTS = `query($id: ID!) { deliveryAttempts(receiverId: $id) { eventId eventType attempt outcome statusCode } }`;

type Sent = { eventId: string; eventType: string; receiverId: string; occurredAt: string };

describe('webhook test events (Send test event, receivers test)', function () {
  this.timeout(30_000);
  const stack = useWebhookStack();
  let manager: string;
  let reader: string;
  const receivers: TestReceiver[] = [];
  const newReceiver = async () => {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  };

  before(async () => {
    manager = await createTestKey(['receivers:manage']);
    reader = await createTestKey(['graphql:read', 'catalog:read']);
  });
  after(async () => {
    for (const r of receivers) await r.close();
  });

  it('delivers a signed WEBHOOK_TEST to that receiver only, whatever its subscription, and records the attempt', async () => {
    const target = await newReceiver();
    const bystander = await newReceiver();
    const receiver = await stack.addReceiver(target.url, { secret: SECRET, types: ['LEARNING_OPPORTUNITY_DELETED'] });
    await stack.addReceiver(bystander.url, { secret: SECRET }); // every type

    const res = await graphql<{ sendTestWebhookEvent: Sent }>(stack.api, manager, SEND, { id: receiver.id });
    expect(res.body.errors ?? []).to.deep.equal([]);
    const sent = res.body.data!.sendTestWebhookEvent;
    expect(sent).to.include({ eventType: 'WEBHOOK_TEST', receiverId: receiver.id });

    const [delivery] = await target.waitFor(1);
    const body = JSON.parse(delivery!.body.toString('utf8')) as Record<string, unknown>;
    expect(body).to.deep.equal({
      id: sent.eventId,
      type: 'WEBHOOK_TEST',
      occurredAt: sent.occurredAt,
      resource: { type: 'WEBHOOK_RECEIVER', id: receiver.id },
      data: null,
    });
    expect(delivery!.headers).to.include({
      'x-service-event-id': sent.eventId,
      'x-service-event-type': 'WEBHOOK_TEST',
      'user-agent': 'Service-Data-API-Webhooks/1',
    });
    // Its body has no resource.version (it is about no record), so no header claims one.
    expect(delivery!.headers).to.not.have.property('x-service-resource-version');
    const verified = verifyDelivery({ rawBody: delivery!.body, headers: delivery!.headers, secret: SECRET });
    expect(verified).to.deep.include({ ok: true, signed: true });
    expect(verified.ok && verified.other).to.deep.equal(body);
    expect(
      verifyDelivery({ rawBody: delivery!.body, headers: delivery!.headers, secret: `${SECRET}-wrong` }),
    ).to.include({ ok: false, reason: 'SIGNATURE_MISMATCH' });

    const attempts = await eventually(async () => {
      const r = await graphql<{ deliveryAttempts: Record<string, unknown>[] }>(stack.api, reader, ATTEMPTS, {
        id: receiver.id,
      });
      return r.body.data?.deliveryAttempts.length ? r.body.data.deliveryAttempts : null;
    });
    expect(attempts).to.deep.equal([
      { eventId: sent.eventId, eventType: 'WEBHOOK_TEST', attempt: 1, outcome: 'SUCCESS', statusCode: 200 },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(bystander.requests).to.have.length(0);
  });

  it('never puts a test event in the change feed, nor in `events list` unless asked for by type', async () => {
    const target = await newReceiver();
    const receiver = await stack.addReceiver(target.url, { secret: SECRET });
    const feedKey = await createTestKey(['catalog:read'], testDb(), 1_000_000);
    const from = await head(stack.api, feedKey);
    const sent = (await graphql<{ sendTestWebhookEvent: Sent }>(stack.api, manager, SEND, { id: receiver.id })).body
      .data!.sendTestWebhookEvent;
    // A catalog change after it: once the feed shows that, it has passed the test event's moment.
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    const { events } = await collect(stack.api, feedKey, from, 1);
    expect(events.map((e) => e.type)).to.deep.equal(['LEARNING_OPPORTUNITY_PUBLISHED']);

    const listed = await listStoredEvents(testDb().pool, { limit: 1000 });
    expect(listed.map((e) => e.id)).to.not.include(sent.eventId);
    const tests = await listStoredEvents(testDb().pool, { type: 'WEBHOOK_TEST', limit: 1000 });
    expect(tests.map((e) => e.id)).to.include(sent.eventId);
    await target.waitFor(2); // the test event and the publication
  });

  it('`receivers test ID` sends one the same way; a redelivery of it goes to its receiver only', async () => {
    const target = await newReceiver();
    const bystander = await newReceiver();
    const receiver = await stack.addReceiver(target.url, { secret: SECRET });
    await stack.addReceiver(bystander.url);
    const run = await cli('receivers', 'test', receiver.id, '--json');
    expect(run.code, run.stderr).to.equal(0);
    const sent = json<Sent>(run.stdout);
    expect(sent).to.include({ eventType: 'WEBHOOK_TEST', receiverId: receiver.id });
    const [delivery] = await target.waitFor(1);
    expect(verifyDelivery({ rawBody: delivery!.body, headers: delivery!.headers, secret: SECRET })).to.deep.include({
      ok: true,
      other: JSON.parse(delivery!.body.toString()),
    });

    const again = await redeliverEvent({ pool: testDb().pool, boss: stack.boss }, sent.eventId);
    expect(again.receiverIds).to.deep.equal([receiver.id]);
    await target.waitFor(2);
    expect(bystander.requests).to.have.length(0);
  });

  it('refuses a disabled receiver (INVALID_STATE_TRANSITION, CLI exit 5) and an unknown one (NOT_FOUND, exit 3)', async () => {
    const receiver = await stack.addReceiver((await newReceiver()).url);
    await testDb().pool.query(
      `update receiver set enabled = false, disabled_reason = 'manual', disabled_at = now() where id = $1`,
      [receiver.id],
    );
    const codes = async (id: string) =>
      (await graphql(stack.api, manager, SEND, { id })).body.errors?.map((e) => e.extensions?.code);
    expect(await codes(receiver.id)).to.deep.equal(['INVALID_STATE_TRANSITION']);
    expect(await codes(randomUUID())).to.deep.equal(['NOT_FOUND']);
    expect(await codes('nope')).to.deep.equal(['BAD_USER_INPUT']);
    expect(
      (await graphql(stack.api, reader, SEND, { id: receiver.id })).body.errors?.map((e) => e.extensions?.code),
    ).to.deep.equal(['FORBIDDEN']);
    expect((await cli('receivers', 'test', receiver.id)).code).to.equal(5);
    expect((await cli('receivers', 'test', randomUUID())).code).to.equal(3);
  });

  it('prunes test events past EVENT_RETENTION_DAYS with their attempts, like other events', async () => {
    const target = await newReceiver();
    const receiver = await stack.addReceiver(target.url);
    const send = async () =>
      (await graphql<{ sendTestWebhookEvent: Sent }>(stack.api, manager, SEND, { id: receiver.id })).body.data!
        .sendTestWebhookEvent.eventId;
    const [old, recent] = [await send(), await send()];
    await target.waitFor(2);
    await eventually(
      async () =>
        (await testDb().pool.query('select 1 from delivery_attempt where event_id = any($1)', [[old, recent]]))
          .rowCount === 2,
    );
    await testDb().pool.query(`update event set occurred_at = now() - interval '31 days' where id = $1`, [old]);
    await pruneRetention(testDb().pool, { eventDays: 30, deliveryAttemptDays: 0 });
    const left = await testDb().pool.query<{ id: string }>('select id from event where id = any($1)', [[old, recent]]);
    expect(left.rows.map((r) => r.id)).to.deep.equal([recent]);
    expect((await testDb().pool.query('select 1 from delivery_attempt where event_id = $1', [old])).rowCount).to.equal(
      0,
    );
  });

  describe('the receiver kit', () => {
    let server: Server;
    let url: string;
    const processed: unknown[] = [];
    before(async () => {
      const handler = webhookReceiver({
        secret: SECRET,
        process: (event) => void processed.push(event),
        logger: { warn: () => {}, error: () => {} },
      });
      server = createServer(handler);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    });
    after(() => new Promise<void>((resolve) => server.close(() => resolve())));

    const post = async (event: Record<string, unknown>) => {
      const body = JSON.stringify(event);
      const headers = deliveryHeaders({
        body,
        eventId: event.id as string,
        eventType: event.type as string,
        secret: SECRET,
      });
      const res = await fetch(url, { method: 'POST', headers, body });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const base = () => ({ id: randomUUID(), occurredAt: new Date().toISOString() });

    it('acknowledges a test event and a type it does not know, without processing them; refuses a malformed test event', async () => {
      const test = await post({
        ...base(),
        type: 'WEBHOOK_TEST',
        resource: { type: 'WEBHOOK_RECEIVER', id: randomUUID() },
        data: null,
      });
      expect(test).to.deep.equal({ status: 200, body: { received: true, ignored: 'WEBHOOK_TEST' } });
      const newer = await post({
        ...base(),
        type: 'SOMETHING_NEWER',
        resource: { type: 'SOMETHING', id: 'x' },
        data: { a: 1 },
      });
      expect(newer).to.deep.equal({ status: 200, body: { received: true, ignored: 'SOMETHING_NEWER' } });
      const malformed = await post({
        ...base(),
        type: 'WEBHOOK_TEST',
        resource: { type: 'LEARNING_OPPORTUNITY', id: randomUUID() },
        data: null,
      });
      expect([malformed.status, malformed.body.reason]).to.deep.equal([400, 'NOT_AN_EVENT']);
      expect(processed).to.deep.equal([]);
    });
  });
});
