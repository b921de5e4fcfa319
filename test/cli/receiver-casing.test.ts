// The receiver commands speak one casing: every enum in their --json output is spelled as GraphQL
// spells it (`"signatureScheme": "STANDARD_WEBHOOKS"` next to `"deliveryMode": "ALL_EVENTS"`, not
// `standard-webhooks`), and --scheme takes both spellings, the command line's and GraphQL's.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect } from 'chai';
import { type EnumTypeDefinitionNode, Kind, parse } from 'graphql';
import { cli, json } from '../support/cli.ts';
import { resetWebhooks } from '../support/webhooks.ts';

/** The values of a GraphQL enum of schema/receivers.graphql. */
function graphqlEnum(name: string): string[] {
  const sdl = readFileSync(resolve(import.meta.dirname, '../../schema/receivers.graphql'), 'utf8');
  const node = parse(sdl).definitions.find(
    (d): d is EnumTypeDefinitionNode => d.kind === Kind.ENUM_TYPE_DEFINITION && d.name.value === name,
  );
  return node!.values!.map((v) => v.name.value);
}

type ReceiverJson = {
  id: string;
  signatureScheme: string;
  deliveryMode: string;
  disabledReason: string | null;
  secret?: string | null;
};

const SECRET = 'a-service-v1-secret-for-casing-0123';

describe('receiver commands: one casing in --json, both spellings for --scheme', function () {
  // Each command is a Node process (about 1 s of CPU each): a minute or two on a loaded machine.
  this.timeout(180_000);
  before(() => resetWebhooks());

  const SCHEMES = graphqlEnum('WebhookSignatureScheme');
  const MODES = graphqlEnum('WebhookDeliveryMode');
  const REASONS = graphqlEnum('WebhookReceiverDisabledReason');

  /** Runs a command with --json, expects success, and checks every enum it prints against GraphQL's. */
  async function run<T extends ReceiverJson | ReceiverJson[]>(...args: string[]): Promise<T> {
    const result = await cli(...args, '--json');
    expect(result.code, `${args.join(' ')}: ${result.stderr}`).to.equal(0);
    const out = json<T>(result.stdout);
    for (const receiver of Array.isArray(out) ? out : [out]) {
      expect(SCHEMES, `${args.join(' ')}: signatureScheme`).to.include(receiver.signatureScheme);
      expect(MODES, `${args.join(' ')}: deliveryMode`).to.include(receiver.deliveryMode);
      if (receiver.disabledReason !== null)
        expect(REASONS, `${args.join(' ')}: disabledReason`).to.include(receiver.disabledReason);
    }
    return out;
  }

  it('add --scheme standard-webhooks --json prints STANDARD_WEBHOOKS next to ALL_EVENTS', async () => {
    const added = await run<ReceiverJson>(
      'receivers',
      'add',
      '--url',
      'https://hooks.example.org/casing-std',
      '--scheme',
      'standard-webhooks',
    );
    expect(added).to.include({ signatureScheme: 'STANDARD_WEBHOOKS', deliveryMode: 'ALL_EVENTS' });
    expect(added.secret).to.match(/^whsec_/);
    const rotated = await run<ReceiverJson>('receivers', 'rotate-secret', added.id, '--grace-hours', '0');
    expect(rotated).to.include({ id: added.id, signatureScheme: 'STANDARD_WEBHOOKS' });
  });

  it('takes GraphQL’s spelling for --scheme too: STANDARD_WEBHOOKS and SERVICE_V1', async () => {
    const standard = await run<ReceiverJson>(
      'receivers',
      'add',
      '--url',
      'https://hooks.example.org/casing-upper',
      '--scheme',
      'STANDARD_WEBHOOKS',
      '--mode',
      'latest-state',
    );
    expect(standard).to.include({ signatureScheme: 'STANDARD_WEBHOOKS', deliveryMode: 'LATEST_STATE' });
    expect(standard.secret, 'generated, as for standard-webhooks').to.match(/^whsec_/);
    const v1 = await run<ReceiverJson>(
      'receivers',
      'add',
      '--url',
      'https://hooks.example.org/casing-v1',
      '--scheme',
      'SERVICE_V1',
      '--secret',
      SECRET,
    );
    expect(v1).to.include({ signatureScheme: 'SERVICE_V1' });

    // The same refusals whatever the spelling, in the words the operator used.
    const unsigned = await cli(
      'receivers',
      'add',
      '--url',
      'https://hooks.example.org/x',
      '--scheme',
      'STANDARD_WEBHOOKS',
      '--unsigned',
    );
    expect(unsigned.code).to.equal(2);
    expect(unsigned.stderr).to.include('--unsigned contradicts --scheme STANDARD_WEBHOOKS');
    const unknown = await cli('receivers', 'add', '--url', 'https://hooks.example.org/x', '--scheme', 'svix');
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr).to.match(/Allowed choices are service-v1, standard-webhooks, SERVICE_V1, STANDARD_WEBHOOKS/);
  });

  it('list, update, disable, enable and remove print the same casing', async () => {
    const { id } = await run<ReceiverJson>(
      'receivers',
      'add',
      '--url',
      'https://hooks.example.org/casing-all',
      '--secret',
      `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
    );
    const switched = await run<ReceiverJson>('receivers', 'update', id, '--scheme', 'STANDARD_WEBHOOKS');
    expect(switched).to.include({ signatureScheme: 'STANDARD_WEBHOOKS' });
    const back = await run<ReceiverJson>('receivers', 'update', id, '--scheme', 'service-v1');
    expect(back).to.include({ signatureScheme: 'SERVICE_V1' });
    const listed = await run<ReceiverJson[]>('receivers', 'list');
    expect(listed.find((r) => r.id === id)).to.include({ signatureScheme: 'SERVICE_V1', deliveryMode: 'ALL_EVENTS' });
    const disabled = await run<ReceiverJson>('receivers', 'disable', id);
    expect(disabled).to.include({ disabledReason: 'MANUAL' });
    await run<ReceiverJson>('receivers', 'enable', id);
    const removed = await run<ReceiverJson>('receivers', 'remove', id);
    expect(removed).to.include({ id, signatureScheme: 'SERVICE_V1' });
  });
});
