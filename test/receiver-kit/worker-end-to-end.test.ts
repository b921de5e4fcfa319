// The service's real delivery path into the receiver kit: a receiver added through the service's
// own code, a record published through GraphQL, the pg-boss job delivered by the real worker,
// verified (signature, timestamp, shape) by webhookReceiver.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import express from 'express';
import type { PgBoss } from 'pg-boss';
import { loadConfig } from '../../src/kernel/config.ts';
import { type WebhookEvent, verifyDelivery, webhookReceiver } from '@lods/receiver-kit';
import type { Api } from '../../src/app/service.ts';
import { createFanOut } from '../../src/webhooks/delivery/fan-out.ts';
import { startBoss } from '../../src/webhooks/queue/boss.ts';
import { addReceiver, removeReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { type DeliveryWorker, startDeliveryWorker } from '../../src/webhooks/delivery/worker.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson, silentLogger, startTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { mutate } from '../support/graphql-documents.ts';
import { testSecrets } from '../support/webhooks.ts';

const SECRET = 'e2e-receiver-secret-7c1f0a9b';

describe('receiver kit end to end: the real delivery worker to a kit receiver', () => {
  const config = {
    ...loadConfig({}).webhooks,
    allowPrivateTargets: true,
    backoffBaseMs: 200,
    backoffMaxMs: 1000,
    timeoutMs: 2000,
    pollIntervalMs: 200,
  };
  let boss: PgBoss;
  let worker: DeliveryWorker;
  let api: Api;
  let server: Server;
  let receiverId: string;
  let key: string;
  const received: { event: WebhookEvent; headers: IncomingHttpHeaders; raw: Buffer }[] = [];
  const rejected: number[] = [];

  before(async function () {
    this.timeout(30_000);
    const db = testDb();
    boss = await startBoss({ url: db.url, config, logger: silentLogger, supervise: true });
    worker = await startDeliveryWorker({ boss, pool: db.pool, config, logger: silentLogger, secrets: testSecrets });
    api = await startTestApi({ fanOut: createFanOut({ boss, orm: db.orm }) });
    key = await createTestKey(['catalog:write', 'catalog:read', 'graphql:read']);

    const headersById = new Map<string, IncomingHttpHeaders>();
    const handler = webhookReceiver({
      secret: SECRET,
      store: (event, raw) => void received.push({ event, headers: headersById.get(event.id)!, raw }),
      process: () => {},
      logger: { warn: () => void rejected.push(Date.now()), error: () => {} },
    });
    const app = express();
    app.post('/webhooks', (req, res) => {
      headersById.set(String(req.headers['x-service-event-id']), req.headers);
      handler(req, res);
    });
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
    receiverId = (
      await addReceiver({ pool: db.pool, secrets: testSecrets, allowPrivateTargets: true }, { url, secret: SECRET })
    ).id;
  });

  after(async function () {
    this.timeout(30_000);
    // Removed first, so that later test files' mutations do not queue deliveries to a closed port.
    await removeReceiver({ pool: testDb().pool }, receiverId).catch(() => {});
    await api?.close();
    await worker?.stop({ timeoutMs: 5000 });
    await boss?.stop({ graceful: true, close: true });
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  async function waitFor<T>(find: () => T | undefined, timeoutMs = 10_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error('timed out waiting for a delivery');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it('delivers a signed PUBLISHED event, with data equal to the REST record, that the kit verifies', async () => {
    const input = buildLearningOpportunityInput();
    await mutate(api, key, 'upsert', input);
    const published = await mutate(api, key, 'publish', input.id);

    const delivery = await waitFor(() => received.find((r) => r.event.resource.id === input.id));
    expect(delivery.event.type).to.equal('LEARNING_OPPORTUNITY_PUBLISHED');
    expect(delivery.event.occurredAt).to.equal(published.updatedAt);
    const rest = await getJson(api, `/v1/learning-opportunities/${input.id}`, key);
    expect(delivery.event.data).to.deep.equal(rest.body);
    expect(delivery.headers['user-agent']).to.equal('Service-Data-API-Webhooks/1');
    expect(delivery.headers['x-service-signature']).to.match(/^sha256=[0-9a-f]{64}$/);

    // The same bytes fail with another secret: the signature really covers them.
    const check = (secret: string) => verifyDelivery({ rawBody: delivery.raw, headers: delivery.headers, secret });
    expect(check(SECRET)).to.include({ ok: true, signed: true });
    expect(check('another-secret-of-enough-length')).to.include({ ok: false, reason: 'SIGNATURE_MISMATCH' });
    expect(rejected).to.have.length(0);
  });

  it('delivers UPDATED and DELETED for later changes of the same record, once each', async () => {
    const input = buildLearningOpportunityInput();
    await mutate(api, key, 'upsert', input);
    await mutate(api, key, 'publish', input.id);
    await mutate(api, key, 'upsert', { ...input, title: 'Renamed after publication' });
    await mutate(api, key, 'delete', input.id);

    const types = await waitFor(() => {
      const mine = received.filter((r) => r.event.resource.id === input.id);
      return mine.length >= 3 ? mine.map((r) => r.event.type).sort() : undefined;
    });
    expect(types).to.deep.equal([
      'LEARNING_OPPORTUNITY_DELETED',
      'LEARNING_OPPORTUNITY_PUBLISHED',
      'LEARNING_OPPORTUNITY_UPDATED',
    ]);
    const updated = received.find(
      (r) => r.event.resource.id === input.id && r.event.type === 'LEARNING_OPPORTUNITY_UPDATED',
    )!;
    expect(updated.event.data).to.include({ title: 'Renamed after publication' });
    const deleted = received.find(
      (r) => r.event.resource.id === input.id && r.event.type === 'LEARNING_OPPORTUNITY_DELETED',
    )!;
    expect(deleted.event.data).to.equal(null);
  });
});
