// Managing a receiver's signature scheme (issue 21): `receivers add/update --scheme`, `receivers
// list`, `rotate-secret --grace-hours` on the command line and the same over GraphQL. A generated
// secret is shown once (CLI JSON `secret`, the GraphQL field of the creating/rotating mutation) and
// nowhere else; SERVICE_V1 refuses a grace and says why; a previous secret is sealed like the current
// one and moves with `receivers reencrypt`.
import { expect } from 'chai';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { loadTargets } from '../../src/webhooks/delivery/load-targets.ts';
import {
  addReceiver,
  removeReceiver,
  rotateReceiverSecret,
  updateReceiver,
} from '../../src/webhooks/receivers/receivers.ts';
import { createSecretKeyring } from '../../src/webhooks/secrets/secret-box.ts';
import { prepareSecrets, reencryptSecrets } from '../../src/webhooks/secrets/seal-secrets.ts';
import { createTestKey, graphql, silentLogger } from '../support/api.ts';
import { cli, json } from '../support/cli.ts';
import { resetWebhooks, TEST_SECRET_KEY, testSecrets, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';

type Listed = {
  id: string;
  signatureScheme: string;
  previousSecretExpiresAt: string | null;
  hasSecret: boolean;
  secret?: string;
};
const V1_SECRET = 'a-service-v1-secret-0123456789';

describe('receivers --scheme and rotate-secret --grace-hours on the command line', function () {
  this.timeout(60_000);
  before(() => resetWebhooks());

  it('adds a standard-webhooks receiver with a generated secret shown once, lists its scheme, rotates with a grace', async () => {
    const added = await cli(
      'receivers',
      'add',
      '--url',
      'https://hooks.example.org/std',
      '--scheme',
      'standard-webhooks',
      '--json',
    );
    expect(added.code, added.stderr).to.equal(0);
    const receiver = json<Listed>(added.stdout);
    expect(receiver).to.include({
      signatureScheme: 'STANDARD_WEBHOOKS',
      hasSecret: true,
      previousSecretExpiresAt: null,
    });
    expect(receiver.secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    // The standard library takes it as it is.
    expect(() => new StandardWebhook(receiver.secret!)).to.not.throw();

    const listed = await cli('receivers', 'list', '--json');
    const row = json<Listed[]>(listed.stdout).find((r) => r.id === receiver.id)!;
    expect(row).to.include({ signatureScheme: 'STANDARD_WEBHOOKS' }).and.not.have.property('secret');
    expect(listed.stdout).to.not.include(receiver.secret);
    expect((await cli('receivers', 'list')).stdout).to.include('standard-webhooks');

    const rotated = await cli('receivers', 'rotate-secret', receiver.id, '--grace-hours', '2', '--json');
    expect(rotated.code, rotated.stderr).to.equal(0);
    const after = json<Listed>(rotated.stdout);
    expect(after.secret)
      .to.match(/^whsec_/)
      .and.not.equal(receiver.secret);
    expect(Date.parse(after.previousSecretExpiresAt!) - Date.now()).to.be.within(1.9 * 3600_000, 2 * 3600_000);
    // A second rotation during a grace ends the grace of the secret before: said, not left unsaid.
    const again = await cli('receivers', 'rotate-secret', receiver.id);
    expect(again.code, again.stderr).to.equal(0);
    expect(again.stdout)
      .to.include('the old secret signs too until')
      .and.include('the secret before the old one stopped signing now');
    const text = await cli('receivers', 'rotate-secret', receiver.id, '--grace-hours', '0');
    expect(text.code, text.stderr).to.equal(0);
    // The rotation before left a grace running: its secret stops signing now too, and says so.
    expect(text.stdout).to.include('the old secret stopped signing now (no grace), and so did the one before it');
    expect(text.stdout).to.match(
      /Generated signing secret \(shown once, store it now; the receiver verifies with it\): whsec_/,
    );
  });

  it('refuses --grace-hours for a service-v1 receiver with the reason, and --unsigned with standard-webhooks', async () => {
    const added = await cli(
      'receivers',
      'add',
      '--url',
      'https://hooks.example.org/v1',
      '--secret',
      V1_SECRET,
      '--json',
    );
    const { id, signatureScheme } = json<Listed>(added.stdout);
    expect(signatureScheme).to.equal('SERVICE_V1');
    const refused = await cli('receivers', 'rotate-secret', id, '--secret', `${V1_SECRET}-2`, '--grace-hours', '24');
    expect(refused.code).to.equal(2);
    expect(refused.stderr)
      .to.include('--grace-hours is refused')
      .and.include('carries one signature')
      .and.include('The receiver must accept the new secret first')
      .and.include('WEBHOOK_SECRET_PREVIOUS=<old>');
    const none = await cli('receivers', 'rotate-secret', id);
    expect(none.code).to.equal(2);
    expect(none.stderr).to.match(/a secret is required/);
    const unsigned = await cli(
      'receivers',
      'add',
      '--url',
      'https://hooks.example.org/x',
      '--scheme',
      'standard-webhooks',
      '--unsigned',
    );
    expect(unsigned.code).to.equal(2);
    expect(unsigned.stderr).to.match(/--unsigned contradicts --scheme standard-webhooks/);
    const badScheme = await cli('receivers', 'add', '--url', 'https://hooks.example.org/x', '--scheme', 'svix');
    expect(badScheme.code).to.equal(2);
    expect(badScheme.stderr).to.match(/Allowed choices are service-v1, standard-webhooks/);
  });

  it('switches a receiver to standard-webhooks only once its secret is a whsec_ one', async () => {
    const { id } = json<Listed>(
      (await cli('receivers', 'add', '--url', 'https://hooks.example.org/switch', '--secret', V1_SECRET, '--json'))
        .stdout,
    );
    const refused = await cli('receivers', 'update', id, '--scheme', 'standard-webhooks');
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.match(
      /--scheme: a Standard Webhooks secret is whsec_ .* give it one with rotate-secret first/,
    );
    const whsec = `whsec_${Buffer.alloc(32, 5).toString('base64')}`;
    expect((await cli('receivers', 'rotate-secret', id, '--secret', whsec)).code).to.equal(0);
    const switched = await cli('receivers', 'update', id, '--scheme', 'standard-webhooks', '--json');
    expect(switched.code, switched.stderr).to.equal(0);
    expect(json<Listed>(switched.stdout)).to.include({ signatureScheme: 'STANDARD_WEBHOOKS' });
    const back = await cli('receivers', 'update', id, '--scheme', 'service-v1', '--json');
    expect(json<Listed>(back.stdout)).to.include({ signatureScheme: 'SERVICE_V1' });
  });
});

describe('GraphQL: signatureScheme, generated secrets and rotation grace', function () {
  this.timeout(20_000);
  const stack = useWebhookStack({ worker: false });
  let key: string;
  const FIELDS = 'id signatureScheme hasSecret previousSecretExpiresAt secret';
  const call = async (query: string, variables: Record<string, unknown> = {}) => {
    const res = await graphql<Record<string, Listed>>(stack.api, key, query, variables);
    return { data: res.body.data ? Object.values(res.body.data)[0] : null, errors: res.body.errors ?? [] };
  };

  before(async () => {
    key = await createTestKey(['receivers:manage']);
  });

  it('creates a STANDARD_WEBHOOKS receiver whose generated secret only the creating and rotating mutations return', async () => {
    const created = await call(
      `mutation($input: CreateWebhookReceiverInput!) { createWebhookReceiver(input: $input) { ${FIELDS} } }`,
      {
        input: { url: 'https://hooks.example.org/gql', signatureScheme: 'STANDARD_WEBHOOKS' },
      },
    );
    expect(created.errors).to.deep.equal([]);
    expect(created.data).to.include({
      signatureScheme: 'STANDARD_WEBHOOKS',
      hasSecret: true,
      previousSecretExpiresAt: null,
    });
    expect(created.data!.secret).to.match(/^whsec_/);
    const id = created.data!.id;
    expect((await call(`query($id: ID!) { webhookReceiver(id: $id) { ${FIELDS} } }`, { id })).data).to.include({
      secret: null,
    });
    expect((await call(`{ webhookReceivers { ${FIELDS} } }`)).data).to.satisfy((all: Listed[]) =>
      all.every((r) => r.secret === null),
    );

    const ROTATE = `mutation($id: ID!, $secret: String, $graceHours: Int) { rotateWebhookReceiverSecret(id: $id, secret: $secret, graceHours: $graceHours) { ${FIELDS} } }`;
    const rotated = await call(ROTATE, { id });
    expect(rotated.errors).to.deep.equal([]);
    expect(rotated.data!.secret)
      .to.match(/^whsec_/)
      .and.not.equal(created.data!.secret);
    expect(Date.parse(rotated.data!.previousSecretExpiresAt!) - Date.now(), 'default grace 24 h').to.be.within(
      23.9 * 3600_000,
      24 * 3600_000,
    );
    const given = await call(ROTATE, { id, secret: `whsec_${Buffer.alloc(40, 1).toString('base64')}`, graceHours: 1 });
    expect(given.data).to.include({ secret: null });
    const tooLong = await call(ROTATE, { id, graceHours: 721 });
    expect(tooLong.errors[0]?.extensions).to.deep.include({
      code: 'BAD_USER_INPUT',
      invalidParams: [{ name: 'graceHours', reason: 'must be a whole number of hours from 0 (no grace) to 720' }],
    });
    const notWhsec = await call(ROTATE, { id, secret: V1_SECRET });
    expect(notWhsec.errors[0]?.extensions).to.deep.include({ code: 'BAD_USER_INPUT' });
  });

  it('SERVICE_V1 stays the default, refuses graceHours with the reason, and a switch to STANDARD_WEBHOOKS without a whsec_ secret', async () => {
    const created = await call(
      `mutation($input: CreateWebhookReceiverInput!) { createWebhookReceiver(input: $input) { ${FIELDS} } }`,
      {
        input: { url: 'https://hooks.example.org/v1', secret: V1_SECRET },
      },
    );
    expect(created.data).to.include({ signatureScheme: 'SERVICE_V1', secret: null });
    const refused = await call(
      `mutation($id: ID!) { rotateWebhookReceiverSecret(id: $id, secret: "${V1_SECRET}-2", graceHours: 24) { id } }`,
      { id: created.data!.id },
    );
    expect(refused.errors[0]?.extensions?.code).to.equal('BAD_USER_INPUT');
    expect(refused.errors[0]?.message).to.include('graceHours: a SERVICE_V1 delivery carries one signature');
    const refusedUpdate = await call(
      `mutation($id: ID!) { updateWebhookReceiver(id: $id, input: { signatureScheme: STANDARD_WEBHOOKS }) { id } }`,
      { id: created.data!.id },
    );
    expect(refusedUpdate.errors[0]?.extensions).to.deep.include({ code: 'BAD_USER_INPUT' });
  });
});

describe('a previous secret sealed like the current one', function () {
  this.timeout(20_000);
  before(() => resetWebhooks());

  it('moves to the new key with receivers reencrypt and still signs during the grace', async () => {
    const added = await cli(
      'receivers',
      'add',
      '--url',
      'https://hooks.example.org/keys',
      '--scheme',
      'standard-webhooks',
      '--json',
    );
    const { id, secret: old } = json<Listed>(added.stdout);
    const { secret: fresh } = json<Listed>((await cli('receivers', 'rotate-secret', id, '--json')).stdout);
    const newKey = Buffer.alloc(32, 8).toString('base64');
    const rotated = createSecretKeyring({
      current: Buffer.from(newKey, 'base64'),
      previous: Buffer.from(TEST_SECRET_KEY, 'base64'),
    });
    const result = await reencryptSecrets(testDb().pool, rotated);
    expect(result.resealed).to.be.at.least(1);
    const { rows } = await testDb().pool.query(
      'select secret_key_id, previous_secret_key_id from receiver where id = $1',
      [id],
    );
    expect(rows[0]).to.deep.equal({
      secret_key_id: rotated.currentKeyId,
      previous_secret_key_id: rotated.currentKeyId,
    });
    // The old key dropped: both secrets still open.
    const onlyNew = createSecretKeyring({ current: Buffer.from(newKey, 'base64') });
    const targets = await loadTargets(
      testDb().pool,
      [{ eventId: '00000000-0000-4000-8000-000000000000', receiverId: id, attempt: 1 }],
      onlyNew,
    );
    expect(targets.receivers.get(id)).to.include({
      secret: fresh,
      previousSecret: old,
      scheme: 'standard-webhooks',
      secretUnavailable: null,
    });
    expect(testSecrets.keyIds).to.not.include(onlyNew.currentKeyId);
  });

  it('a start refuses a previous secret sealed with a key it does not hold, as it does a current one', async () => {
    const keyB = createSecretKeyring({ current: Buffer.alloc(32, 9) });
    const added = await addReceiver(
      { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true },
      { url: 'https://hooks.example.org/b', scheme: 'standard-webhooks' },
    );
    // Re-keyed by a process holding only key B: the old secret stays under the suite's key.
    await rotateReceiverSecret({ pool: testDb().pool, secrets: keyB }, added.id, { graceHours: 1 });
    const refused = await prepareSecrets(testDb().pool, keyB, silentLogger).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(refused?.message)
      .to.include(`1 under key ${testSecrets.currentKeyId}`)
      .and.include('SECRET_ENCRYPTION_KEY_PREVIOUS');
    await removeReceiver({ pool: testDb().pool }, added.id);
  });

  it('a second rotation during a grace keeps only the secret it replaces; a switch to service-v1 ends the grace', async () => {
    const deps = { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true };
    const added = await addReceiver(deps, { url: 'https://hooks.example.org/twice', scheme: 'standard-webhooks' });
    const second = await rotateReceiverSecret(deps, added.id, {});
    const third = await rotateReceiverSecret(deps, added.id, { graceHours: 5 });
    const load = async () =>
      (
        await loadTargets(
          testDb().pool,
          [{ eventId: '00000000-0000-4000-8000-000000000000', receiverId: added.id, attempt: 1 }],
          testSecrets,
        )
      ).receivers.get(added.id)!;
    expect(await load()).to.include({ secret: third.secret, previousSecret: second.secret });
    const switched = await updateReceiver(deps, added.id, { scheme: 'service-v1' });
    expect(switched).to.include({ signatureScheme: 'service-v1', previousSecretExpiresAt: null });
    expect(await load()).to.include({ secret: third.secret, previousSecret: null, scheme: 'service-v1' });
  });
});
