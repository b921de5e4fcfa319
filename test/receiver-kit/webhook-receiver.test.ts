import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import express from 'express';
import {
  MemorySeenStore,
  NO_SECRET_MESSAGE,
  verifyDelivery,
  type WebhookEvent,
  type WebhookReceiverOptions,
  webhookReceiver,
} from '@lods/receiver-kit';

// Signed here independently of the kit (the algorithm of docs/contract.md, "Delivery headers"), so that a mistake in
// the kit's own signer cannot hide a mistake in its verifier.
function sign(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

function buildEvent(overrides: Partial<WebhookEvent> = {}): WebhookEvent {
  const resourceId = randomUUID();
  return {
    id: randomUUID(),
    type: 'LEARNING_OPPORTUNITY_PUBLISHED',
    occurredAt: new Date().toISOString(),
    resource: { type: 'LEARNING_OPPORTUNITY', id: resourceId, version: 1 },
    data: { id: resourceId, title: 'Welding Safety', updatedAt: new Date().toISOString(), sessions: [] },
    ...overrides,
  } as WebhookEvent;
}

type Delivery = { body?: string; secret?: string | null; timestamp?: number; headers?: Record<string, string | null> };

async function deliver(
  url: string,
  event: WebhookEvent,
  options: Delivery = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = options.body ?? JSON.stringify(event);
  const timestamp = String(options.timestamp ?? Date.now());
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'Service-Data-API-Webhooks/1',
    'x-service-event-id': event.id,
    'x-service-event-type': event.type,
    'x-service-timestamp': timestamp,
  };
  const secret = options.secret === undefined ? SECRET : options.secret;
  // The signature covers the body as delivered (a tamper test signs the original, sends another).
  if (secret) headers['x-service-signature'] = sign(secret, timestamp, JSON.stringify(event));
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (value === null) delete headers[name];
    else headers[name] = value;
  }
  const res = await fetch(url, { method: 'POST', headers, body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const SECRET = 'whsec_test_2f9c1d';

describe('receiver kit: webhookReceiver over real HTTP', () => {
  let server: Server;
  let url: string;
  let processed: WebhookEvent[];
  let stored: { event: WebhookEvent; raw: string }[];
  let handler: ReturnType<typeof webhookReceiver>;
  const warnings: string[] = [];
  let processDelayMs = 0;

  async function start(options: Partial<WebhookReceiverOptions> = {}): Promise<void> {
    processed = [];
    stored = [];
    handler = webhookReceiver({
      secret: SECRET,
      store: (event, raw) => void stored.push({ event, raw: raw.toString('utf8') }),
      process: async (event) => {
        if (processDelayMs) await new Promise((r) => setTimeout(r, processDelayMs));
        processed.push(event);
      },
      logger: { warn: (_f, m) => void warnings.push(m), error: (_f, m) => void warnings.push(m) },
      ...options,
    });
    const app = express();
    app.post('/webhooks', handler);
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  }

  async function stop(): Promise<void> {
    await handler.idle();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  describe('with a signing secret', () => {
    before(() => start());
    after(() => stop());
    beforeEach(() => {
      processDelayMs = 0;
    });

    it('accepts a signed delivery, stores the raw bytes and processes the parsed event', async () => {
      const event = buildEvent();
      const res = await deliver(url, event);
      expect(res.status).to.equal(202);
      await handler.idle();
      expect(processed.map((e) => e.id)).to.include(event.id);
      expect(processed.find((e) => e.id === event.id)).to.deep.equal(event);
      expect(stored.find((s) => s.event.id === event.id)?.raw).to.equal(JSON.stringify(event));
    });

    it('accepts a DELETED event with data null', async () => {
      const event = buildEvent({ type: 'LEARNING_OPPORTUNITY_DELETED', data: null } as Partial<WebhookEvent>);
      expect((await deliver(url, event)).status).to.equal(202);
    });

    it("accepts and processes a LEFT_VIEW event (a receiver with a view: the record left it): data null, the record's resource version", async () => {
      const event = buildEvent({
        type: 'LEARNING_OPPORTUNITY_LEFT_VIEW',
        data: null,
        resource: { type: 'LEARNING_OPPORTUNITY', id: randomUUID(), version: 7 },
      } as Partial<WebhookEvent>);
      const res = await deliver(url, event);
      // A catalog event handed to `process` (202), not an unknown type acknowledged and ignored (200).
      expect(res.status).to.equal(202);
      await handler.idle();
      expect(processed.find((e) => e.id === event.id)).to.deep.equal(event);
      const timestamp = String(Date.now());
      const verified = verifyDelivery({
        rawBody: JSON.stringify(event),
        headers: {
          'x-service-event-id': event.id,
          'x-service-event-type': event.type,
          'x-service-timestamp': timestamp,
          'x-service-signature': sign(SECRET, timestamp, JSON.stringify(event)),
        },
        secret: SECRET,
      });
      expect(verified).to.deep.include({ ok: true, event, signed: true });
    });

    it('refuses a LEFT_VIEW event with data or without a resource version (400 NOT_AN_EVENT), processing nothing', async () => {
      const resourceId = randomUUID();
      const withData = buildEvent({
        type: 'LEARNING_OPPORTUNITY_LEFT_VIEW',
        resource: { type: 'LEARNING_OPPORTUNITY', id: resourceId, version: 2 },
        data: { id: resourceId, updatedAt: new Date().toISOString() },
      } as unknown as Partial<WebhookEvent>);
      const withoutVersion = buildEvent({
        type: 'LEARNING_OPPORTUNITY_LEFT_VIEW',
        resource: { type: 'LEARNING_OPPORTUNITY', id: resourceId },
        data: null,
      } as unknown as Partial<WebhookEvent>);
      const refusedData = await deliver(url, withData);
      expect([refusedData.status, refusedData.body.reason]).to.deep.equal([400, 'NOT_AN_EVENT']);
      expect(refusedData.body.detail).to.match(/data must be null for LEARNING_OPPORTUNITY_LEFT_VIEW/);
      const refusedVersion = await deliver(url, withoutVersion);
      expect([refusedVersion.status, refusedVersion.body.reason]).to.deep.equal([400, 'NOT_AN_EVENT']);
      expect(refusedVersion.body.detail).to.match(/resource.version must be a positive integer/);
      await handler.idle();
      expect(processed.map((e) => e.id)).to.not.include.members([withData.id, withoutVersion.id]);
    });

    it('rejects a tampered body with 401 and does not store or process it', async () => {
      const event = buildEvent();
      const tampered = JSON.stringify({ ...event, data: { ...event.data, title: 'Free for everyone' } });
      const res = await deliver(url, event, { body: tampered });
      expect(res.status).to.equal(401);
      expect(res.body.reason).to.equal('SIGNATURE_MISMATCH');
      await handler.idle();
      expect(processed.map((e) => e.id)).not.to.include(event.id);
      expect(stored.map((s) => s.event.id)).not.to.include(event.id);
    });

    it('rejects a signature made with another secret (401)', async () => {
      const res = await deliver(url, buildEvent(), { secret: 'someone-elses-secret' });
      expect(res.status).to.equal(401);
      expect(res.body.reason).to.equal('SIGNATURE_MISMATCH');
    });

    it('rejects an unsigned delivery and a malformed signature (401)', async () => {
      const unsigned = await deliver(url, buildEvent(), { secret: null });
      expect([unsigned.status, unsigned.body.reason]).to.deep.equal([401, 'MISSING_SIGNATURE']);
      const malformed = await deliver(url, buildEvent(), { headers: { 'x-service-signature': 'sha1=abcdef' } });
      expect([malformed.status, malformed.body.reason]).to.deep.equal([401, 'BAD_SIGNATURE_FORMAT']);
    });

    it('rejects a correctly signed but stale or future timestamp outside the 5-minute window (401), accepts one inside it', async () => {
      const stale = await deliver(url, buildEvent(), { timestamp: Date.now() - 6 * 60_000 });
      expect([stale.status, stale.body.reason]).to.deep.equal([401, 'TIMESTAMP_OUTSIDE_TOLERANCE']);
      const future = await deliver(url, buildEvent(), { timestamp: Date.now() + 6 * 60_000 });
      expect([future.status, future.body.reason]).to.deep.equal([401, 'TIMESTAMP_OUTSIDE_TOLERANCE']);
      const skewed = await deliver(url, buildEvent(), { timestamp: Date.now() - 4 * 60_000 });
      expect(skewed.status).to.equal(202);
    });

    it('rejects missing event headers and a non-numeric timestamp with 400', async () => {
      for (const name of ['x-service-event-id', 'x-service-event-type', 'x-service-timestamp']) {
        const res = await deliver(url, buildEvent(), { headers: { [name]: null } });
        expect([res.status, res.body.reason], name).to.deep.equal([400, 'MISSING_HEADERS']);
      }
      const res = await deliver(url, buildEvent(), { headers: { 'x-service-timestamp': '2026-01-01T00:00:00Z' } });
      expect([res.status, res.body.reason]).to.deep.equal([400, 'MALFORMED_TIMESTAMP']);
    });

    it('rejects a signed body that is not JSON or not an event with 400', async () => {
      const timestamp = String(Date.now());
      const notJson = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-service-event-id': randomUUID(),
          'x-service-event-type': 'LEARNING_OPPORTUNITY_PUBLISHED',
          'x-service-timestamp': timestamp,
          'x-service-signature': sign(SECRET, timestamp, '{"id":'),
        },
        body: '{"id":',
      });
      expect(notJson.status).to.equal(400);
      expect(((await notJson.json()) as { reason: string }).reason).to.equal('BODY_NOT_JSON');
      const wrongShape = buildEvent({
        type: 'LEARNING_OPPORTUNITY_UPDATED',
        data: null,
      } as unknown as Partial<WebhookEvent>);
      const res = await deliver(url, wrongShape);
      expect([res.status, res.body.reason]).to.deep.equal([400, 'NOT_AN_EVENT']);
      const headerMismatch = await deliver(url, buildEvent(), { headers: { 'x-service-event-id': randomUUID() } });
      expect([headerMismatch.status, headerMismatch.body.reason]).to.deep.equal([400, 'NOT_AN_EVENT']);
    });

    it('refuses a body over the limit with 413', async () => {
      const event = buildEvent();
      const huge = JSON.stringify({ ...event, data: { ...event.data, description: 'x'.repeat(1024 * 1024) } });
      const res = await deliver(url, event, { body: huge });
      expect(res.status).to.equal(413);
    });

    it('acknowledges a repeated event id (retries, concurrent redeliveries) but processes it once', async () => {
      const event = buildEvent();
      const first = await deliver(url, event);
      const again = await Promise.all([deliver(url, event), deliver(url, event), deliver(url, event)]);
      expect(first.status).to.equal(202);
      expect(again.map((r) => r.status)).to.deep.equal([200, 200, 200]);
      expect(again.every((r) => r.body.duplicate === true)).to.equal(true);
      await handler.idle();
      expect(processed.filter((e) => e.id === event.id)).to.have.length(1);
      expect(stored.filter((s) => s.event.id === event.id)).to.have.length(1);
    });

    it('acknowledges before slow processing finishes', async () => {
      processDelayMs = 3000;
      const event = buildEvent();
      const started = performance.now();
      const res = await deliver(url, event);
      const ackMs = performance.now() - started;
      expect(res.status).to.equal(202);
      // Before the processing ended (order, not speed: a loaded machine may take a second to answer).
      expect(ackMs).to.be.below(3000);
      expect(processed.map((e) => e.id)).not.to.include(event.id);
      await handler.idle();
      // idle() waited for the processing (3 s); Node's timers run on the event loop's whole-ms clock
      // and may fire up to a millisecond early against performance.now() (seen: 2999.9 ms).
      expect(performance.now() - started).to.be.at.least(2990);
      expect(processed.map((e) => e.id)).to.include(event.id);
    });

    it('answers 405 to anything but POST on a plain node:http server', async () => {
      const plain = createServer(webhookReceiver({ secret: SECRET, process: () => {} }));
      await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
      try {
        const res = await fetch(`http://127.0.0.1:${(plain.address() as AddressInfo).port}/`);
        expect(res.status).to.equal(405);
        expect(res.headers.get('allow')).to.equal('POST');
      } finally {
        plain.closeAllConnections();
        await new Promise((resolve) => plain.close(resolve));
      }
    });
  });

  describe('failures around storing and processing', () => {
    afterEach(() => stop());

    it('answers 500 when storing fails, and processes the retried delivery', async () => {
      let failNext = true;
      await start({
        store: () => {
          if (failNext) {
            failNext = false;
            throw new Error('disk full');
          }
        },
      });
      const event = buildEvent();
      expect((await deliver(url, event)).status).to.equal(500);
      expect((await deliver(url, event)).status).to.equal(202);
      await handler.idle();
      expect(processed.filter((e) => e.id === event.id)).to.have.length(1);
    });

    it('logs a processing error without changing the acknowledgement, and keeps processing later events', async () => {
      const failing = buildEvent();
      await start({
        process: (event) => {
          if (event.id === failing.id) throw new Error('downstream unavailable');
          processed.push(event);
        },
      });
      warnings.length = 0;
      expect((await deliver(url, failing)).status).to.equal(202);
      const next = buildEvent();
      expect((await deliver(url, next)).status).to.equal(202);
      await handler.idle();
      expect(warnings).to.include('webhook event processing failed');
      expect(processed.map((e) => e.id)).to.deep.equal([next.id]);
    });

    it('accepts unsigned deliveries only with an explicit allowUnsigned, still checking the event shape', async () => {
      await start({ secret: null, allowUnsigned: true });
      expect((await deliver(url, buildEvent(), { secret: null })).status).to.equal(202);
      const bad = await deliver(url, buildEvent(), { secret: null, body: '{"hello":"world"}' });
      expect(bad.status).to.equal(400);
    });

    it('forgets the oldest ids beyond the bounded in-memory store', async () => {
      const seen = new MemorySeenStore(2);
      await start({ dedupe: seen });
      const [a, b, c] = [buildEvent(), buildEvent(), buildEvent()];
      for (const e of [a, b, c]) expect((await deliver(url, e)).status).to.equal(202);
      expect(seen.size).to.equal(2);
      expect((await deliver(url, c)).status).to.equal(200); // still remembered
      expect((await deliver(url, a)).status).to.equal(202); // evicted: accepted again
    });

    it('accepts a signature made with either secret during a rotation', async () => {
      await start({ secret: ['new-secret', SECRET] });
      expect((await deliver(url, buildEvent(), { secret: 'new-secret' })).status).to.equal(202);
      expect((await deliver(url, buildEvent(), { secret: SECRET })).status).to.equal(202);
      expect((await deliver(url, buildEvent(), { secret: 'retired' })).status).to.equal(401);
    });
  });
});

describe('receiver kit: fails closed without a secret', () => {
  const unsigned = () => {
    const event = buildEvent();
    return {
      rawBody: JSON.stringify(event),
      headers: {
        'x-service-event-id': event.id,
        'x-service-event-type': event.type,
        'x-service-timestamp': String(Date.now()),
      },
    };
  };

  it('webhookReceiver refuses to be built with no secret, an empty one or a list of empty ones', () => {
    for (const secret of [undefined, null, '', [''], []]) {
      expect(() => webhookReceiver({ secret, process: () => {} }), JSON.stringify(secret)).to.throw(
        TypeError,
        NO_SECRET_MESSAGE,
      );
    }
    expect(() => webhookReceiver({ secret: '', allowUnsigned: true, process: () => {} })).to.not.throw();
  });

  it('verifyDelivery refuses a forged unsigned delivery when the secret is missing or empty, unless allowUnsigned', () => {
    for (const secret of [undefined, null, '', ['']]) {
      expect(verifyDelivery({ ...unsigned(), secret }), JSON.stringify(secret)).to.deep.include({
        ok: false,
        reason: 'NO_SECRET_CONFIGURED',
        status: 401,
      });
    }
    expect(verifyDelivery({ ...unsigned(), secret: '', allowUnsigned: true })).to.deep.include({
      ok: true,
      signed: false,
    });
    // A configured secret always wins: allowUnsigned never lets an unsigned delivery past a secret.
    expect(verifyDelivery({ ...unsigned(), secret: SECRET, allowUnsigned: true })).to.deep.include({
      ok: false,
      reason: 'MISSING_SIGNATURE',
    });
  });
});
