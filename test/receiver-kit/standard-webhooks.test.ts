// The receiver kit and Standard Webhooks (standardwebhooks.com, spec v1): deliveries signed by the
// reference library `standardwebhooks` are accepted by the kit's webhookReceiver over real HTTP, with
// the same replay (event id), tolerance and shape checks as SERVICE_V1 deliveries; and the kit's own
// signer produces headers the unmodified `standardwebhooks` and `svix` verifiers accept, rotation
// (two signatures) included.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { deliveryHeaders, verifyDelivery, type WebhookEvent, webhookReceiver } from '@lods/receiver-kit';

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const SECRET = newSecret();

function buildEvent(): WebhookEvent {
  const resourceId = randomUUID();
  return {
    id: randomUUID(),
    type: 'LEARNING_OPPORTUNITY_UPDATED',
    occurredAt: new Date().toISOString(),
    resource: { type: 'LEARNING_OPPORTUNITY', id: resourceId, version: 1 },
    data: { id: resourceId, title: 'Forklift basics', updatedAt: new Date().toISOString() },
  } as WebhookEvent;
}

/** Headers signed by the reference library (not the kit), so that a mistake in the kit's signer cannot hide one in its verifier. */
function referenceHeaders(
  event: WebhookEvent,
  body: string,
  options: { secret?: string; at?: Date; id?: string } = {},
): Record<string, string> {
  const at = options.at ?? new Date();
  const id = options.id ?? event.id;
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new StandardWebhook(options.secret ?? SECRET).sign(id, at, body),
    'x-service-event-type': event.type,
  };
}

describe('receiver kit: Standard Webhooks deliveries', () => {
  let server: Server;
  let url: string;
  let processed: WebhookEvent[];
  let handler: ReturnType<typeof webhookReceiver>;

  async function start(secret: string | string[]): Promise<void> {
    processed = [];
    handler = webhookReceiver({
      secret,
      process: (event) => void processed.push(event),
      logger: { warn: () => {}, error: () => {} },
    });
    server = createServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  }
  async function stop(): Promise<void> {
    await handler.idle();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  const post = async (headers: Record<string, string>, body: string) => {
    const res = await fetch(url, { method: 'POST', headers, body });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  describe('one secret', () => {
    before(() => start(SECRET));
    after(() => stop());

    it('accepts a delivery signed by the standardwebhooks library and processes the event', async () => {
      const event = buildEvent();
      const body = JSON.stringify(event);
      expect((await post(referenceHeaders(event, body), body)).status).to.equal(202);
      await handler.idle();
      expect(processed.find((e) => e.id === event.id)).to.deep.equal(event);
    });

    it('acknowledges a replayed webhook-id (a retry or redelivery) without processing it again', async () => {
      const event = buildEvent();
      const body = JSON.stringify(event);
      expect((await post(referenceHeaders(event, body), body)).status).to.equal(202);
      const again = await post(referenceHeaders(event, body, { at: new Date(Date.now() + 1000) }), body);
      expect(again).to.deep.equal({ status: 200, body: { received: true, duplicate: true } });
      await handler.idle();
      expect(processed.filter((e) => e.id === event.id)).to.have.length(1);
    });

    it('rejects a tampered body, another secret and a missing signature with 401', async () => {
      const event = buildEvent();
      const body = JSON.stringify(event);
      const tampered = await post(referenceHeaders(event, body), body.replace('Forklift', 'Forklist'));
      expect(tampered).to.deep.include({ status: 401 });
      expect(tampered.body.reason).to.equal('SIGNATURE_MISMATCH');
      expect((await post(referenceHeaders(event, body, { secret: newSecret() }), body)).body.reason).to.equal(
        'SIGNATURE_MISMATCH',
      );
      const unsigned = referenceHeaders(event, body);
      delete unsigned['webhook-signature'];
      expect(await post(unsigned, body)).to.deep.include({ status: 401 });
      expect((await post(unsigned, body)).body.reason).to.equal('MISSING_SIGNATURE');
      expect(
        (await post({ ...referenceHeaders(event, body), 'webhook-signature': 'v2,abc' }, body)).body.reason,
      ).to.equal('BAD_SIGNATURE_FORMAT');
      await handler.idle();
      expect(processed.map((e) => e.id)).to.not.include(event.id);
    });

    it('rejects a correctly signed timestamp outside the 5-minute window (401) and a timestamp in milliseconds (400)', async () => {
      const event = buildEvent();
      const body = JSON.stringify(event);
      const stale = await post(referenceHeaders(event, body, { at: new Date(Date.now() - 6 * 60_000) }), body);
      expect(stale.status).to.equal(401);
      expect(stale.body.reason).to.equal('TIMESTAMP_OUTSIDE_TOLERANCE');
      expect(
        (await post(referenceHeaders(event, body, { at: new Date(Date.now() + 6 * 60_000) }), body)).body.reason,
      ).to.equal('TIMESTAMP_OUTSIDE_TOLERANCE');
      expect(
        (await post(referenceHeaders(event, body, { at: new Date(Date.now() - 4 * 60_000) }), body)).status,
      ).to.equal(202);
      const ms = await post({ ...referenceHeaders(buildEvent(), body), 'webhook-timestamp': String(Date.now()) }, body);
      expect(ms).to.deep.include({ status: 400 });
      expect(ms.body.reason).to.equal('MALFORMED_TIMESTAMP');
    });

    it('rejects a signed delivery whose webhook-id is not the body id (400)', async () => {
      const event = buildEvent();
      const body = JSON.stringify(event);
      const res = await post(referenceHeaders(event, body, { id: randomUUID() }), body);
      expect(res.status).to.equal(400);
      expect(res.body.reason).to.equal('NOT_AN_EVENT');
    });
  });

  describe('during a rotation', () => {
    const previous = newSecret();
    after(() => stop());

    it('accepts a delivery carrying both signatures with either secret alone, and one signed by either secret with both configured', async () => {
      const event = buildEvent();
      const body = JSON.stringify(event);
      const headers = deliveryHeaders({
        scheme: 'standard-webhooks',
        eventId: event.id,
        eventType: event.type,
        body,
        secret: SECRET,
        previousSecret: previous,
      });
      expect(headers['webhook-signature']!.split(' ')).to.have.length(2);
      for (const secret of [SECRET, previous])
        expect(verifyDelivery({ rawBody: body, headers, secret })).to.deep.include({
          ok: true,
          scheme: 'standard-webhooks',
        });
      expect(verifyDelivery({ rawBody: body, headers, secret: newSecret() })).to.deep.include({
        ok: false,
        reason: 'SIGNATURE_MISMATCH',
      });
      await start([SECRET, previous]);
      for (const secret of [SECRET, previous]) {
        const e = buildEvent();
        const b = JSON.stringify(e);
        expect((await post(referenceHeaders(e, b, { secret }), b)).status).to.equal(202);
      }
    });
  });
});

describe('receiver kit: its Standard Webhooks signer, checked by the reference verifiers', () => {
  it('signs headers the unmodified standardwebhooks and svix verifiers accept, with one secret and with two', () => {
    const event = buildEvent();
    const body = JSON.stringify(event);
    const previous = newSecret();
    for (const headers of [
      deliveryHeaders({ scheme: 'standard-webhooks', eventId: event.id, eventType: event.type, body, secret: SECRET }),
      deliveryHeaders({
        scheme: 'standard-webhooks',
        eventId: event.id,
        eventType: event.type,
        body,
        secret: SECRET,
        previousSecret: previous,
      }),
    ]) {
      expect(new StandardWebhook(SECRET).verify(body, headers)).to.deep.equal(event);
      expect(new SvixWebhook(SECRET).verify(body, headers)).to.deep.equal(event);
      expect(headers['webhook-timestamp']).to.match(/^\d{10}$/);
      expect(Object.keys(headers).filter((h) => h.startsWith('x-service-'))).to.deep.equal(['x-service-event-type']);
    }
    const rotated = deliveryHeaders({
      scheme: 'standard-webhooks',
      eventId: event.id,
      eventType: event.type,
      body,
      secret: SECRET,
      previousSecret: previous,
    });
    expect(new StandardWebhook(previous).verify(body, rotated)).to.deep.equal(event);
    expect(new SvixWebhook(previous).verify(body, rotated)).to.deep.equal(event);
    expect(() => new StandardWebhook(newSecret()).verify(body, rotated)).to.throw('No matching signature found');
  });
});
