// Delivery modes per receiver (docs/contract.md, "Delivery guarantees"): ALL_EVENTS by default, LATEST_STATE set with
// `receivers add|update --mode` or GraphQL `deliveryMode`, shown by `receivers list` and the
// receiver's GraphQL type; an unknown mode is refused with the argument named.
import { expect } from 'chai';
import { createTestKey, graphql } from '../support/api.ts';
import { cli, json } from '../support/cli.ts';
import { useWebhookStack } from '../support/webhooks.ts';

describe('receiver delivery modes', function () {
  this.timeout(60_000);
  const stack = useWebhookStack({ worker: false, config: { allowPrivateTargets: false } });
  let key: string;
  before(async () => {
    key = await createTestKey(['receivers:manage']);
  });

  it('GraphQL: deliveryMode defaults to ALL_EVENTS, is set on create and update, and an unknown one is refused', async () => {
    const fields = 'id deliveryMode';
    const create = await graphql<{ createWebhookReceiver: { id: string; deliveryMode: string } }>(
      stack.api,
      key,
      `mutation($input: CreateWebhookReceiverInput!) { createWebhookReceiver(input: $input) { ${fields} } }`,
      { input: { url: 'https://hooks.example.org/a' } },
    );
    expect(create.body.data?.createWebhookReceiver.deliveryMode).to.equal('ALL_EVENTS');
    const id = create.body.data!.createWebhookReceiver.id;
    const update = await graphql<{ updateWebhookReceiver: { deliveryMode: string } }>(
      stack.api,
      key,
      `mutation($id: ID!, $input: UpdateWebhookReceiverInput!) { updateWebhookReceiver(id: $id, input: $input) { ${fields} } }`,
      { id, input: { deliveryMode: 'LATEST_STATE' } },
    );
    expect(update.body.data?.updateWebhookReceiver.deliveryMode).to.equal('LATEST_STATE');
    const created = await graphql<{ createWebhookReceiver: { deliveryMode: string } }>(
      stack.api,
      key,
      `mutation($input: CreateWebhookReceiverInput!) { createWebhookReceiver(input: $input) { ${fields} } }`,
      { input: { url: 'https://hooks.example.org/b', deliveryMode: 'LATEST_STATE' } },
    );
    expect(created.body.data?.createWebhookReceiver.deliveryMode).to.equal('LATEST_STATE');
    const refused = await graphql(
      stack.api,
      key,
      `
        mutation ($input: CreateWebhookReceiverInput!) {
          createWebhookReceiver(input: $input) {
            id
          }
        }
      `,
      {
        input: { url: 'https://hooks.example.org/c', deliveryMode: 'SOMETIMES' },
      },
    );
    expect(refused.body.errors?.[0]?.extensions?.code).to.equal('BAD_USER_INPUT');
  });

  it('CLI: --mode latest-state on add and update, shown by receivers list; an unknown mode exits 2', async () => {
    const added = await cli(
      'receivers',
      'add',
      '--url',
      'https://hooks.example.org/cli',
      '--unsigned',
      '--mode',
      'latest-state',
      '--json',
    );
    expect(added.code, added.stderr).to.equal(0);
    const { id, deliveryMode } = json<{ id: string; deliveryMode: string }>(added.stdout);
    expect(deliveryMode).to.equal('LATEST_STATE');
    const updated = await cli('receivers', 'update', id, '--mode', 'all-events', '--json');
    expect(json<{ deliveryMode: string }>(updated.stdout).deliveryMode).to.equal('ALL_EVENTS');
    const listed = json<{ id: string; deliveryMode: string }[]>((await cli('receivers', 'list', '--json')).stdout);
    expect(listed.find((r) => r.id === id)?.deliveryMode).to.equal('ALL_EVENTS');
    // The table speaks as --mode does.
    const row = (await cli('receivers', 'list')).stdout.split('\n').find((line) => line.startsWith(id));
    expect(row)
      .to.match(/ all-events /)
      .and.not.match(/ALL_EVENTS/);
    const refused = await cli('receivers', 'update', id, '--mode', 'sometimes');
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.include('--mode: must be all-events or latest-state');
  });
});
