// Self-service receivers over GraphQL (receivers:manage): the same rules and effects as the CLI,
// secrets write-only, stable error codes, and counts of waiting and dead deliveries.
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { createTestKey, graphql } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { jobs, useWebhookStack } from '../support/webhooks.ts';
import { DEAD_LETTER_QUEUE, DELIVERY_QUEUE } from '../../src/webhooks/queue/boss.ts';

const FIELDS =
  'id url hasSecret eventTypes enabled disabledReason disabledAt lastSuccessAt lastFailureAt waitingDeliveries deadDeliveries createdAt';
const CREATE = `mutation($input: CreateWebhookReceiverInput!) { createWebhookReceiver(input: $input) { ${FIELDS} } }`;
const UPDATE = `mutation($id: ID!, $input: UpdateWebhookReceiverInput!) { updateWebhookReceiver(id: $id, input: $input) { ${FIELDS} } }`;
const DISABLE = `mutation($id: ID!) { disableWebhookReceiver(id: $id) { ${FIELDS} } }`;
const ENABLE = `mutation($id: ID!) { enableWebhookReceiver(id: $id) { ${FIELDS} } }`;
const DELETE = `mutation($id: ID!) { deleteWebhookReceiver(id: $id) { id removedDeliveries } }`;
const ROTATE = `mutation($id: ID!, $secret: String!) { rotateWebhookReceiverSecret(id: $id, secret: $secret) { ${FIELDS} } }`;
const LIST = `{ webhookReceivers { ${FIELDS} } }`;
const ONE = `query($id: ID!) { webhookReceiver(id: $id) { ${FIELDS} } }`;
const UNKNOWN = '00000000-0000-4000-8000-000000000000';
const SECRET = 'graphql-receiver-secret-0123456789';

type Receiver = Record<string, unknown> & { id: string };

describe('GraphQL: self-service webhook receivers', function () {
  this.timeout(20_000);
  const stack = useWebhookStack({ worker: false, config: { allowPrivateTargets: false } });
  let key: string;
  const call = async <T = Receiver>(query: string, variables: Record<string, unknown> = {}, as = key) => {
    const res = await graphql<Record<string, T>>(stack.api, as, query, variables);
    return { data: res.body.data ? Object.values(res.body.data)[0] : null, errors: res.body.errors ?? [] };
  };

  before(async () => {
    key = await createTestKey(['receivers:manage']);
  });

  it('creates, reads, updates and deletes a receiver; the secret never comes back', async () => {
    const created = await call(CREATE, {
      input: { url: 'https://hooks.example.org/lods', secret: SECRET, types: ['LEARNING_OPPORTUNITY_PUBLISHED'] },
    });
    expect(created.errors).to.deep.equal([]);
    expect(created.data).to.include({
      url: 'https://hooks.example.org/lods',
      hasSecret: true,
      enabled: true,
      disabledReason: null,
      waitingDeliveries: 0,
      deadDeliveries: 0,
    });
    expect(created.data!.eventTypes).to.deep.equal(['LEARNING_OPPORTUNITY_PUBLISHED']);
    const id = created.data!.id;

    expect((await call(ONE, { id })).data).to.deep.equal(created.data);
    expect((await call<Receiver[]>(LIST)).data!.map((r) => r.id)).to.include(id);
    const updated = await call(UPDATE, { id, input: { url: 'https://hooks.example.org/v2', types: [] } });
    expect(updated.data).to.include({ url: 'https://hooks.example.org/v2', hasSecret: true });
    expect(updated.data!.eventTypes).to.deep.equal([]);
    const rotated = await call(ROTATE, { id, secret: `${SECRET}-next` });
    expect(rotated.data).to.include({ hasSecret: true });
    expect(JSON.stringify([created, updated, rotated])).to.not.include(SECRET);

    expect((await call(DELETE, { id })).data).to.deep.equal({ id, removedDeliveries: 0 });
    expect((await call(ONE, { id })).data).to.equal(null);
  });

  it('answers bad input with BAD_USER_INPUT naming the field, an unknown id with NOT_FOUND, a missing scope with FORBIDDEN', async () => {
    const codes = async (query: string, variables: Record<string, unknown>, as = key) =>
      (await call(query, variables, as)).errors.map((e) => [
        e.extensions?.code,
        e.extensions?.invalidParams?.[0]?.name,
      ]);
    expect(await codes(CREATE, { input: { url: 'http://169.254.169.254/latest' } })).to.deep.equal([
      ['BAD_USER_INPUT', 'url'],
    ]);
    expect(await codes(CREATE, { input: { url: 'https://hooks.example.org/', secret: 'short' } })).to.deep.equal([
      ['BAD_USER_INPUT', 'secret'],
    ]);
    // Every bad setting at once, in one error (as a REST 400 names every bad parameter).
    const every = (await call(CREATE, { input: { url: 'ftp://x', secret: 'short', maxPerSecond: 0, view: 'q=x' } }))
      .errors;
    expect(every.map((e) => e.extensions?.code)).to.deep.equal(['BAD_USER_INPUT']);
    expect(every[0]!.extensions?.invalidParams?.map((p) => p.name)).to.deep.equal([
      'url',
      'secret',
      'maxPerSecond',
      'view',
    ]);
    const updateEvery = (await call(UPDATE, { id: UNKNOWN, input: { url: 'ftp://x', maxPerSecond: 0, view: 'q=x' } }))
      .errors;
    expect(updateEvery[0]!.extensions?.invalidParams?.map((p) => p.name)).to.deep.equal([
      'url',
      'maxPerSecond',
      'view',
    ]);
    expect(await codes(UPDATE, { id: 'nope', input: {} })).to.deep.equal([['BAD_USER_INPUT', 'id']]);
    for (const query of [DISABLE, ENABLE, DELETE])
      expect(await codes(query, { id: UNKNOWN }), query).to.deep.equal([['NOT_FOUND', undefined]]);
    expect(await codes(ROTATE, { id: UNKNOWN, secret: SECRET })).to.deep.equal([['NOT_FOUND', undefined]]);
    const reader = await createTestKey(['graphql:read', 'catalog:write']);
    expect(await codes(LIST, {}, reader)).to.deep.equal([['FORBIDDEN', undefined]]);
    expect(await codes(CREATE, { input: { url: 'https://hooks.example.org/' } }, reader)).to.deep.equal([
      ['FORBIDDEN', undefined],
    ]);
  });

  it('never echoes a secret in an error, even when graphql-js would repeat a rejected variable', async () => {
    const typo = await call(CREATE, { input: { url: 'https://hooks.example.org/', secret: SECRET, zzz: 1 } });
    expect(typo.errors.map((e) => [e.extensions?.code, e.message])).to.deep.equal([
      [
        'BAD_USER_INPUT',
        'Variable "$input" got invalid value; Field "zzz" is not defined by type "CreateWebhookReceiverInput".',
      ],
    ]);
    const listed = await call(ROTATE, { id: UNKNOWN, secret: [SECRET] });
    expect(listed.errors.map((e) => e.message)).to.deep.equal([
      'Variable "$secret" got invalid value; String cannot represent a non string value',
    ]);
    const nested = await call(CREATE, { input: { url: ['https://hooks.example.org/'], secret: SECRET } });
    expect(nested.errors.map((e) => e.message)).to.deep.equal([
      'Variable "$input" got invalid value at "input.url"; String cannot represent a non string value',
    ]);
  });

  it('disable moves waiting deliveries to the dead letters at once and says so in the counts; enable clears the reason', async () => {
    const id = (await call(CREATE, { input: { url: 'https://hooks.example.org/waiting' } })).data!.id; // no worker runs: deliveries wait
    for (let i = 0; i < 2; i++) {
      const input = buildLearningOpportunityInput();
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await stack.api.writes.publish(input.id);
    }
    expect((await call(ONE, { id })).data).to.include({ waitingDeliveries: 2, deadDeliveries: 0 });
    const disabled = await call(DISABLE, { id });
    expect(disabled.data).to.include({
      enabled: false,
      disabledReason: 'MANUAL',
      waitingDeliveries: 0,
      deadDeliveries: 2,
    });
    expect(disabled.data!.disabledAt).to.be.a('string');
    expect(await jobs(DELIVERY_QUEUE, { receiverId: id })).to.deep.equal([]);
    expect((await jobs(DEAD_LETTER_QUEUE, { receiverId: id })).map((j) => j.data.reason)).to.deep.equal(
      Array(2).fill('receiver_disabled'),
    );
    const enabled = await call(ENABLE, { id });
    expect(enabled.data).to.include({ enabled: true, disabledReason: null, disabledAt: null, deadDeliveries: 2 });
  });
});
