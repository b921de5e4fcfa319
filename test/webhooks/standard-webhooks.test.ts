// Real deliveries to a STANDARD_WEBHOOKS receiver, handed unmodified to the verifiers of npm
// `standardwebhooks` and `svix` (docs/contract.md, "Standard Webhooks"): the first attempt, a retry, a redelivery,
// a test event, and deliveries inside a rotation's grace (verified once with the old, once with the new secret);
// after the grace the old secret signs nothing and the retention prune erases it. A SERVICE_V1
// receiver's headers stay what docs/contract.md, "Delivery headers" says, byte for byte, a whsec_ secret included.
import { createHmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import express from 'express';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { pruneRetention } from '../../src/retention/prune.ts';
import { redeliverEvent } from '../../src/webhooks/delivery/redeliver.ts';
import { sendTestEvent } from '../../src/webhooks/delivery/test-event.ts';
import { addReceiver, rotateReceiverSecret } from '../../src/webhooks/receivers/receivers.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { type ReceivedRequest, startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, testSecrets, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

/** The request as a receiver's framework hands it over: a string map of headers, the raw body. */
const headersOf = (request: ReceivedRequest): Record<string, string> =>
  Object.fromEntries(Object.entries(request.headers as IncomingHttpHeaders).map(([k, v]) => [k, String(v)]));

/** Both reference verifiers, unmodified; each returns the parsed body or throws. */
function verifyWithBoth(request: ReceivedRequest, secret: string): unknown[] {
  const body = request.body.toString('utf8');
  return [
    new StandardWebhook(secret).verify(body, headersOf(request)),
    new SvixWebhook(secret).verify(body, headersOf(request)),
  ];
}

describe('Standard Webhooks deliveries, verified by standardwebhooks and svix', function () {
  this.timeout(30_000);
  const stack = useWebhookStack();
  let receiver: TestReceiver;
  let receiverId: string;
  let secret: string;
  const deps = () => ({ pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true });

  before(async () => {
    receiver = await startReceiver();
    const added = await addReceiver(deps(), { url: receiver.url, scheme: 'standard-webhooks' });
    expect(added).to.include({ signatureScheme: 'standard-webhooks', hasSecret: true, previousSecretExpiresAt: null });
    expect(added.secret, 'generated and shown once').to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    receiverId = added.id;
    secret = added.secret!;
  });
  after(async () => {
    await receiver.close();
  });

  async function publish(): Promise<{ id: string; body: string }> {
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    const { rows } = await testDb().pool.query<{ id: string; body: string }>(
      'select id, body from event where resource_id = $1',
      [input.id],
    );
    return rows[0]!;
  }
  const requestsOf = (eventId: string) => receiver.requests.filter((r) => r.headers['webhook-id'] === eventId);
  const attempts = (eventId: string, count: number) =>
    eventually(
      async () => requestsOf(eventId).length >= count && requestsOf(eventId),
      10_000,
      `${count} attempts of ${eventId}`,
    );

  it('sends the stored body with the Standard Webhooks headers, and both verifiers accept it unmodified', async () => {
    const before = Math.floor(Date.now() / 1000);
    const event = await publish();
    const [request] = await attempts(event.id, 1);
    expect(request!.body.equals(Buffer.from(event.body, 'utf8'))).to.equal(true);
    const own = request!.headerNames.filter(
      (h) => !['host', 'connection', 'content-length', 'x-service-resource-version'].includes(h),
    );
    expect(own.toSorted()).to.deep.equal([
      'content-type',
      'user-agent',
      'webhook-id',
      'webhook-signature',
      'webhook-timestamp',
      'x-service-event-type',
    ]);
    expect(request!.headers).to.include({
      'content-type': 'application/json',
      'user-agent': 'Service-Data-API-Webhooks/1',
      'webhook-id': event.id,
      'x-service-event-type': 'LEARNING_OPPORTUNITY_PUBLISHED',
    });
    expect(Number(request!.headers['webhook-timestamp'])).to.be.within(before, Math.ceil(Date.now() / 1000));
    expect(request!.headers['webhook-signature']).to.match(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(verifyWithBoth(request!, secret)).to.deep.equal([JSON.parse(event.body), JSON.parse(event.body)]);
    expect(() =>
      new StandardWebhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(event.body, headersOf(request!)),
    ).to.throw('No matching signature found');
  });

  it('a retry and a redelivery keep the webhook-id, carry their own timestamp, and verify', async () => {
    // The first attempt fails, so the worker retries (after at least a second, so that the timestamp moves on).
    const failedOnce = new Set<unknown>();
    receiver.reply((r) =>
      failedOnce.has(r.headers['webhook-id'])
        ? { status: 200 }
        : (failedOnce.add(r.headers['webhook-id']), { status: 503 }),
    );
    const event = await publish();
    await attempts(event.id, 2);
    receiver.reply({ status: 200 });
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await redeliverEvent({ pool: testDb().pool, boss: stack.boss }, event.id, receiverId);
    const [first, retry, redelivery] = await attempts(event.id, 3);
    for (const request of [first!, retry!, redelivery!]) {
      expect(request.headers['webhook-id']).to.equal(event.id);
      expect(verifyWithBoth(request, secret)).to.deep.equal([JSON.parse(event.body), JSON.parse(event.body)]);
    }
    expect(Number(redelivery!.headers['webhook-timestamp'])).to.be.above(Number(first!.headers['webhook-timestamp']));
  });

  it('a WEBHOOK_TEST event (receivers test) carries the same headers and verifies', async () => {
    const sent = await sendTestEvent({ pool: testDb().pool, boss: stack.boss }, receiverId);
    const [request] = await attempts(sent.eventId, 1);
    expect(request!.headers['x-service-event-type']).to.equal('WEBHOOK_TEST');
    const [standard, svix] = verifyWithBoth(request!, secret) as { id: string }[];
    expect([standard!.id, svix!.id]).to.deep.equal([sent.eventId, sent.eventId]);
  });

  it('during a rotation grace each delivery verifies with the old and with the new secret; after it, only with the new one, and the old is erased', async () => {
    const old = secret;
    const rotated = await rotateReceiverSecret(deps(), receiverId, { graceHours: 24 });
    const fresh = rotated.secret!;
    expect(fresh)
      .to.match(/^whsec_/)
      .and.not.equal(old);
    expect(Date.parse(rotated.previousSecretExpiresAt!) - Date.now()).to.be.within(23.9 * 3600_000, 24 * 3600_000);

    const during = await publish();
    const [inGrace] = await attempts(during.id, 1);
    expect(String(inGrace!.headers['webhook-signature']).split(' ')).to.have.length(2);
    expect(verifyWithBoth(inGrace!, old), 'with the old secret').to.have.length(2);
    expect(verifyWithBoth(inGrace!, fresh), 'with the new secret').to.have.length(2);

    // The grace ends: the worker signs with the new secret alone at once; the prune erases the old one.
    await testDb().pool.query(
      `update receiver set previous_secret_expires_at = now() - interval '1 second' where id = $1`,
      [receiverId],
    );
    const after = await publish();
    const [afterGrace] = await attempts(after.id, 1);
    expect(String(afterGrace!.headers['webhook-signature']).split(' ')).to.have.length(1);
    expect(verifyWithBoth(afterGrace!, fresh)).to.have.length(2);
    expect(() => new StandardWebhook(old).verify(afterGrace!.body.toString(), headersOf(afterGrace!))).to.throw(
      'No matching signature found',
    );
    expect(() => new SvixWebhook(old).verify(afterGrace!.body.toString(), headersOf(afterGrace!))).to.throw(
      'No matching signature found',
    );

    const sealed = () =>
      testDb().pool.query(
        'select previous_secret_ciphertext, previous_secret_key_id, previous_secret_expires_at from receiver where id = $1',
        [receiverId],
      );
    expect((await sealed()).rows[0].previous_secret_ciphertext, 'kept until the prune').to.not.equal(null);
    const pruned = await pruneRetention(testDb().pool, { eventDays: 0, deliveryAttemptDays: 0 });
    expect(pruned.previousSecretsErased).to.equal(1);
    expect((await sealed()).rows[0]).to.deep.equal({
      previous_secret_ciphertext: null,
      previous_secret_key_id: null,
      previous_secret_expires_at: null,
    });
    secret = fresh;
  });

  it('a rotation with graceHours 0 replaces the secret at once; a given secret must be whsec_ + base64 of 24..64 bytes', async () => {
    const given = `whsec_${Buffer.alloc(24, 9).toString('base64')}`;
    const rotated = await rotateReceiverSecret(deps(), receiverId, { secret: given, graceHours: 0 });
    expect(rotated).to.include({ previousSecretExpiresAt: null }).and.not.have.property('secret');
    const event = await publish();
    const [request] = await attempts(event.id, 1);
    expect(String(request!.headers['webhook-signature']).split(' ')).to.have.length(1);
    expect(verifyWithBoth(request!, given)).to.have.length(2);
    for (const bad of [
      'whsec_c2hvcnQ=',
      `whsec_${Buffer.alloc(65).toString('base64')}`,
      'not-a-whsec-secret-0123456789',
      `whsec_${Buffer.alloc(32).toString('base64url')}-`,
    ]) {
      const error = await rotateReceiverSecret(deps(), receiverId, { secret: bad }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error, bad).to.deep.include({ code: 'BAD_USER_INPUT' });
    }
    secret = given;
  });
});

describe('a receiver written only against Standard Webhooks (the docs/receivers.md example)', function () {
  this.timeout(20_000);
  const stack = useWebhookStack();
  let server: Server;
  const accepted: { id: string }[] = [];
  let rejected = 0;

  before(async () => {
    const deps = { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true };
    const app = express();
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { id, secret } = await addReceiver(deps, {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
      scheme: 'standard-webhooks',
    });
    // The code of docs/receivers.md, as a receiver would paste it.
    const webhook = new StandardWebhook(secret!);
    app.post('/webhooks', express.raw({ type: 'application/json' }), (req, res) => {
      let event;
      try {
        event = webhook.verify(req.body as Buffer, req.headers as Record<string, string>);
      } catch {
        rejected++;
        return res.status(401).end();
      }
      accepted.push(event as { id: string });
      res.status(202).end();
    });
    await rotateReceiverSecret(deps, id, { graceHours: 24 }); // the receiver still has the old secret: the grace covers it
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('accepts every delivery, during a rotation too', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const input = buildLearningOpportunityInput();
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await stack.api.writes.publish(input.id);
      ids.push(
        (await testDb().pool.query<{ id: string }>('select id from event where resource_id = $1', [input.id])).rows[0]!
          .id,
      );
    }
    await eventually(async () => accepted.length >= 3, 10_000, 'three accepted deliveries');
    expect(accepted.map((e) => e.id).toSorted()).to.deep.equal(ids.toSorted());
    expect(rejected).to.equal(0);
  });
});

describe('SERVICE_V1 deliveries stay as they were', function () {
  this.timeout(20_000);
  const stack = useWebhookStack();
  let receiver: TestReceiver;
  const WHSEC = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;

  before(async () => {
    receiver = await startReceiver();
    await addReceiver(
      { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true },
      { url: receiver.url, secret: WHSEC },
    );
  });
  after(async () => {
    await receiver.close();
  });

  it('a whsec_ secret on a SERVICE_V1 receiver signs exactly the six headers of docs/contract.md, in their order, keyed with the secret string', async () => {
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    const [request] = await receiver.waitFor(1);
    const event = (
      await testDb().pool.query<{ id: string; body: string }>('select id, body from event where resource_id = $1', [
        input.id,
      ])
    ).rows[0]!;
    const timestamp = String(request!.headers['x-service-timestamp']);
    const expected = [
      ['content-type', 'application/json'],
      ['user-agent', 'Service-Data-API-Webhooks/1'],
      ['x-service-event-id', event.id],
      ['x-service-event-type', 'LEARNING_OPPORTUNITY_PUBLISHED'],
      ['x-service-timestamp', timestamp],
      [
        'x-service-signature',
        `sha256=${createHmac('sha256', WHSEC).update(`${timestamp}.${event.body}`).digest('hex')}`,
      ],
    ];
    const sent = request!.headerNames
      .map((name) => [name, String(request!.headers[name])])
      .filter(([name]) => !['host', 'connection', 'content-length', 'x-service-resource-version'].includes(name!));
    expect(sent).to.deep.equal(expected);
    expect(timestamp).to.match(/^\d{13}$/);
    expect(request!.body.toString('utf8')).to.equal(event.body);
  });
});
