// What goes over the wire: exactly the headers of docs/contract.md, "Delivery headers", the stored body bytes, and a
// signature a receiver can verify over `<timestamp>.<raw body>`, fresh for every attempt.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type ReceivedRequest, type TestReceiver } from '../support/receiver.ts';
import { useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

const SECRET = 'whsec_0123456789abcdef0123456789';

/** What a receiver does (docs/contract.md, "Delivery headers"): HMAC over the raw bytes, constant-time comparison. */
function verify(request: ReceivedRequest, secret: string): boolean {
  const timestamp = String(request.headers['x-service-timestamp']);
  const expected = Buffer.from(
    `sha256=${createHmac('sha256', secret).update(`${timestamp}.`).update(request.body).digest('hex')}`,
  );
  const given = Buffer.from(String(request.headers['x-service-signature'] ?? ''));
  return given.length === expected.length && timingSafeEqual(given, expected);
}

describe('webhook headers and signature', () => {
  const stack = useWebhookStack();
  let signed: TestReceiver;
  let unsigned: TestReceiver;

  before(async () => {
    signed = await startReceiver();
    unsigned = await startReceiver();
    await stack.addReceiver(signed.url, { secret: SECRET });
    await stack.addReceiver(unsigned.url);
  });
  after(async () => {
    await signed.close();
    await unsigned.close();
  });

  async function publish(): Promise<{ id: string; event: { id: string; type: string; body: string } }> {
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    const { rows } = await testDb().pool.query('select id, type, body from event where resource_id = $1', [input.id]);
    return { id: input.id, event: rows[0] };
  }

  it('POSTs the stored body bytes with exactly the seven headers, and a signature that verifies', async () => {
    const before = Date.now();
    const { event } = await publish();
    const [request] = await signed.waitFor(1);
    expect(request!.method).to.equal('POST');
    expect(request!.path).to.equal('/hooks/lods');
    expect(request!.body.equals(Buffer.from(event.body, 'utf8'))).to.equal(true);
    expect(request!.headers['content-length']).to.equal(String(Buffer.byteLength(event.body)));
    const own = request!.headerNames.filter((h) => !['host', 'connection', 'content-length'].includes(h));
    expect(own.toSorted()).to.deep.equal([
      'content-type',
      'user-agent',
      'x-service-event-id',
      'x-service-event-type',
      'x-service-resource-version',
      'x-service-signature',
      'x-service-timestamp',
    ]);
    expect(request!.headers['content-type']).to.equal('application/json');
    expect(request!.headers['user-agent']).to.equal('Service-Data-API-Webhooks/1');
    expect(request!.headers['x-service-event-id']).to.equal(event.id);
    expect(request!.headers['x-service-event-type']).to.equal('LEARNING_OPPORTUNITY_PUBLISHED');
    const timestamp = Number(request!.headers['x-service-timestamp']);
    expect(String(timestamp)).to.match(/^\d{13}$/);
    expect(timestamp).to.be.within(before, Date.now());
    expect(request!.headers['x-service-signature']).to.match(/^sha256=[0-9a-f]{64}$/);
    expect(verify(request!, SECRET)).to.equal(true);
    expect(verify(request!, `${SECRET}x`)).to.equal(false);
    // Tampering with one byte of the body breaks it.
    const tampered = {
      ...request!,
      body: Buffer.from(
        request!.body
          .toString()
          .replace('"type":"LEARNING_OPPORTUNITY_PUBLISHED"', '"type":"LEARNING_OPPORTUNITY_DELETED"'),
      ),
    };
    expect(verify(tampered, SECRET)).to.equal(false);
  });

  it('sends no signature header to a receiver without a secret', async () => {
    const { event } = await publish();
    const requests = await unsigned.waitFor(2);
    const request = requests.find((r) => r.headers['x-service-event-id'] === event.id);
    expect(request).to.not.equal(undefined);
    expect(request!.headers).to.not.have.property('x-service-signature');
    expect(request!.headerNames.filter((h) => h.startsWith('x-service-')).toSorted()).to.deep.equal([
      'x-service-event-id',
      'x-service-event-type',
      'x-service-resource-version',
      'x-service-timestamp',
    ]);
  });

  it('signs every attempt afresh: a retry has a new timestamp and signature over the same body', async () => {
    // The first attempt of each event fails.
    const seen = new Set<unknown>();
    signed.reply((request) =>
      seen.has(request.headers['x-service-event-id'])
        ? { status: 200 }
        : (seen.add(request.headers['x-service-event-id']), { status: 503 }),
    );
    const { event } = await publish();
    const deadline = Date.now() + 5000;
    while (
      signed.requests.filter((r) => r.headers['x-service-event-id'] === event.id).length < 2 &&
      Date.now() < deadline
    )
      await new Promise((r) => setTimeout(r, 20));
    const [first, second] = signed.requests.filter((r) => r.headers['x-service-event-id'] === event.id);
    expect(second, 'a second attempt').to.not.equal(undefined);
    expect(second!.body.equals(first!.body)).to.equal(true);
    expect(Number(second!.headers['x-service-timestamp'])).to.be.above(Number(first!.headers['x-service-timestamp']));
    expect(second!.headers['x-service-signature']).to.not.equal(first!.headers['x-service-signature']);
    expect(verify(first!, SECRET) && verify(second!, SECRET)).to.equal(true);
    signed.reply({ status: 200 });
  });
});
