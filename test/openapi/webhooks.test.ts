// The OpenAPI document's `webhooks` (OpenAPI 3.1) against real deliveries: a SERVICE_V1 receiver and
// a STANDARD_WEBHOOKS receiver (one in a rotation's grace) each get exactly the headers their webhook
// documents, every value matching its schema, and a body that validates against the Event schema.
import type { IncomingHttpHeaders } from 'node:http';
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { sendTestEvent } from '../../src/webhooks/delivery/test-event.ts';
import { addReceiver, rotateReceiverSecret } from '../../src/webhooks/receivers/receivers.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { type ReceivedRequest, startReceiver, type TestReceiver } from '../support/receiver.ts';
import { eventually, testSecrets, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';
import { type Json, loadOpenApiDocument, OpenApiValidator } from './openapi-validator.ts';

const doc = loadOpenApiDocument() as ReturnType<typeof loadOpenApiDocument> & {
  webhooks: Record<string, { post: Json & { parameters: Json[] } }>;
};
const validator = new OpenApiValidator(doc);
/** Added by node's HTTP client for any request; not the service's own. */
const TRANSPORT = ['host', 'connection', 'content-length'];

/** What is wrong with `request` as a delivery of `webhook` (empty when it conforms). */
function problems(webhook: string, request: ReceivedRequest): string[] {
  const operation = doc.webhooks[webhook]!.post;
  const documented = operation.parameters.filter((p) => p.in === 'header');
  const found: string[] = [];
  const headers = request.headers as IncomingHttpHeaders;
  for (const [i, parameter] of documented.entries()) {
    const name = String(parameter.name);
    const value = headers[name];
    if (value === undefined) {
      if (parameter.required) found.push(`missing ${name}`);
      continue;
    }
    const validate = validator.schemaAt(`#/webhooks/${webhook}/post/parameters/${i}/schema`);
    if (!validate(value)) found.push(`${name}: ${JSON.stringify(value)} ${JSON.stringify(validate.errors)}`);
  }
  const names = new Set(documented.map((p) => String(p.name)));
  for (const name of request.headerNames)
    if (!TRANSPORT.includes(name) && !names.has(name)) found.push(`undocumented header ${name}`);
  const validateBody = validator.schemaAt(`#/webhooks/${webhook}/post/requestBody/content/application~1json/schema`);
  if (!validateBody(JSON.parse(request.body.toString('utf8'))))
    found.push(`body: ${JSON.stringify(validateBody.errors)}`);
  return found;
}

describe('the OpenAPI document: webhooks', function () {
  this.timeout(20_000);
  const stack = useWebhookStack();
  const receivers: Record<string, TestReceiver> = {};
  const ids: Record<string, string> = {};

  before(async () => {
    const deps = { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true };
    for (const name of ['v1', 'standard', 'rotating']) receivers[name] = await startReceiver();
    ids.v1 = (await addReceiver(deps, { url: receivers.v1!.url, secret: 'openapi-webhook-secret-0123456789' })).id;
    ids.standard = (await addReceiver(deps, { url: receivers.standard!.url, scheme: 'standard-webhooks' })).id;
    const rotating = await addReceiver(deps, { url: receivers.rotating!.url, scheme: 'standard-webhooks' });
    await rotateReceiverSecret(deps, rotating.id, { graceHours: 1 });
  });
  after(async () => {
    for (const receiver of Object.values(receivers)) await receiver.close();
  });

  it('describes both header sets and the body of the deliveries the service sends', async () => {
    expect(Object.keys(doc.webhooks)).to.deep.equal([
      'learningOpportunityEvent',
      'learningOpportunityEventStandardWebhooks',
    ]);
    const input = buildLearningOpportunityInput();
    await stack.api.writes.upsert(parseLearningOpportunityInput(input));
    await stack.api.writes.publish(input.id);
    const [v1] = await receivers.v1!.waitFor(1);
    const [standard] = await receivers.standard!.waitFor(1);
    const [rotating] = await receivers.rotating!.waitFor(1);
    expect(problems('learningOpportunityEvent', v1!)).to.deep.equal([]);
    expect(problems('learningOpportunityEventStandardWebhooks', standard!)).to.deep.equal([]);
    expect(problems('learningOpportunityEventStandardWebhooks', rotating!)).to.deep.equal([]);
    expect(String(rotating!.headers['webhook-signature']).split(' ')).to.have.length(2);
    // And neither set passes for the other.
    expect(problems('learningOpportunityEvent', standard!)).to.include('missing x-service-event-id');
    expect(problems('learningOpportunityEventStandardWebhooks', v1!)).to.include('missing webhook-id');
  });

  it('describes test deliveries (WEBHOOK_TEST), which receivers must acknowledge like any event', async () => {
    for (const name of ['v1', 'standard']) await sendTestEvent({ pool: testDb().pool, boss: stack.boss }, ids[name]!);
    // The test event, wherever it comes among what arrived (a loaded machine may have sent the
    // publish before it twice: at least once).
    const testDelivery = async (receiver: TestReceiver) =>
      (await eventually(
        async () => receiver.requests.find((r) => JSON.parse(r.body.toString()).type === 'WEBHOOK_TEST'),
        20_000,
        'a WEBHOOK_TEST delivery',
      ))!;
    const v1 = await testDelivery(receivers.v1!);
    const standard = await testDelivery(receivers.standard!);
    expect(problems('learningOpportunityEvent', v1)).to.deep.equal([]);
    expect(problems('learningOpportunityEventStandardWebhooks', standard)).to.deep.equal([]);
  });
});
