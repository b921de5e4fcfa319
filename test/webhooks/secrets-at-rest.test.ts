// Signing secrets at rest: sealed with AES-256-GCM, never in any table (every text, bytea, json and
// array column of every schema is searched after a real delivery), opened only to sign; plain rows
// from older versions are sealed at start; a key rotation with reencrypt; production needs a key.
import { createHmac } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { loadConfig, MISSING_SECRET_KEY } from '../../src/kernel/config.ts';
import { createLogger } from '../../src/kernel/logger.ts';
import { prepareSecrets, reencryptSecrets } from '../../src/webhooks/secrets/seal-secrets.ts';
import { createSecretKeyring, keyIdOf } from '../../src/webhooks/secrets/secret-box.ts';
import { resolveSecretKeyring } from '../../src/webhooks/secrets/secret-keys.ts';
import { createTestKey, graphql, silentLogger } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';
import { resetWebhooks, testSecrets, useWebhookStack } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';
import { execFileChild } from '../support/child-processes.ts';

const SECRET = 'at-rest-secret-8f2c41d7e9a0b3c5';
const ROTATED = 'at-rest-rotated-1a9e7c3b5d2f4e6a';

/** Every (schema, table, column) of a text-like, bytea, json or array type that holds `needle`. */
async function columnsHolding(needle: string): Promise<string[]> {
  const { rows: columns } = await testDb().pool.query<{ s: string; t: string; c: string; type: string }>(`
    select c.table_schema as s, c.table_name as t, c.column_name as c, c.data_type as type
      from information_schema.columns c join information_schema.tables t using (table_schema, table_name)
     where t.table_type = 'BASE TABLE' and c.table_schema not in ('pg_catalog', 'information_schema')
       and c.data_type in ('text', 'character varying', 'character', 'bytea', 'json', 'jsonb', 'ARRAY', 'USER-DEFINED')`);
  const found: string[] = [];
  for (const { s, t, c, type } of columns) {
    const column = `${s}.${t}.${c}`;
    const test =
      type === 'bytea' ? `position(convert_to($1, 'UTF8') in "${c}") > 0` : `"${c}"::text like '%' || $1 || '%'`;
    const { rowCount } = await testDb().pool.query(`select 1 from "${s}"."${t}" where ${test} limit 1`, [needle]);
    if (rowCount) found.push(column);
  }
  return found;
}

describe('receiver secrets at rest', function () {
  this.timeout(30_000);
  let receiver: TestReceiver;
  // Every log line of the API, pg-boss and the worker, at the most verbose level.
  let logged = '';
  const logSink = new Writable({
    write: (chunk: Buffer, _encoding, done) => void ((logged += chunk.toString()), done()),
  });
  const stack = useWebhookStack({
    config: { maxAttempts: 1 },
    logger: createLogger({ level: 'trace', destination: logSink }),
  });
  before(async () => {
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
  });

  it('no table holds a secret after create, rotate and real deliveries; the deliveries are signed with it', async () => {
    const key = await createTestKey(['receivers:manage']);
    const created = await graphql<{ createWebhookReceiver: { id: string } }>(
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
        input: { url: receiver.url, secret: SECRET },
      },
    );
    const id = created.body.data!.createWebhookReceiver.id;
    const publish = async () => {
      const input = buildLearningOpportunityInput();
      await stack.api.writes.upsert(parseLearningOpportunityInput(input));
      await stack.api.writes.publish(input.id);
    };
    await publish();
    const [first] = await receiver.waitFor(1);
    const signs = (secret: string, r: typeof first) =>
      `sha256=${createHmac('sha256', secret).update(`${r!.headers['x-service-timestamp']}.`).update(r!.body).digest('hex')}`;
    expect(first!.headers['x-service-signature']).to.equal(signs(SECRET, first));

    await graphql(
      stack.api,
      key,
      `
        mutation ($id: ID!, $secret: String!) {
          rotateWebhookReceiverSecret(id: $id, secret: $secret) {
            id
          }
        }
      `,
      { id, secret: ROTATED },
    );
    await publish();
    const [, second] = await receiver.waitFor(2);
    expect(second!.headers['x-service-signature']).to.equal(signs(ROTATED, second));

    // A bad secret and an unknown id on the way: errors and their log lines must not echo it either.
    const bad = await graphql(
      stack.api,
      key,
      `
        mutation ($id: ID!, $secret: String!) {
          rotateWebhookReceiverSecret(id: $id, secret: $secret) {
            id
          }
        }
      `,
      { id, secret: `${SECRET} with spaces` },
    );
    const unknown = await graphql(
      stack.api,
      key,
      `
        mutation ($id: ID!, $secret: String!) {
          rotateWebhookReceiverSecret(id: $id, secret: $secret) {
            id
          }
        }
      `,
      { id: '00000000-0000-4000-8000-000000000000', secret: SECRET },
    );
    expect(JSON.stringify([bad.body, unknown.body])).to.not.include(SECRET);

    expect(await columnsHolding(SECRET)).to.deep.equal([]);
    expect(await columnsHolding(ROTATED)).to.deep.equal([]);
    expect(logged).to.include('delivery attempt finished'); // the sink did receive the worker's lines
    expect(logged).to.not.include(SECRET).and.not.include(ROTATED);
    const row = (await testDb().pool.query('select secret, secret_key_id from receiver where id = $1', [id])).rows[0];
    expect(row).to.deep.equal({ secret: null, secret_key_id: testSecrets.currentKeyId });
  });

  it('seals a plain secret left by an older version at start, and refuses a secret under an unknown key', async () => {
    const { rows } = await testDb().pool.query<{ id: string }>(
      `insert into receiver (id, url, secret, created_at) values (gen_random_uuid(), 'https://legacy.example.org/', $1, now()) returning id`,
      [SECRET],
    );
    const id = rows[0]!.id;
    expect(await columnsHolding(SECRET)).to.deep.equal(['public.receiver.secret']); // the search does find a plain secret
    await prepareSecrets(testDb().pool, testSecrets, silentLogger);
    expect(await columnsHolding(SECRET)).to.deep.equal([]);
    const sealed = (
      await testDb().pool.query('select secret_ciphertext, secret_key_id from receiver where id = $1', [id])
    ).rows[0];
    expect(testSecrets.open({ ciphertext: sealed.secret_ciphertext, keyId: sealed.secret_key_id }, id)).to.equal(
      SECRET,
    );

    const stranger = createSecretKeyring({ current: Buffer.alloc(32, 9) });
    const error = await prepareSecrets(testDb().pool, stranger, silentLogger).then(
      () => null,
      (e: Error) => e.message,
    );
    expect(error)
      .to.match(/SECRET_ENCRYPTION_KEY_PREVIOUS/)
      .and.not.include(SECRET);
    await testDb().pool.query('delete from receiver where id = $1', [id]);
  });

  it('rotates the key: SECRET_ENCRYPTION_KEY_PREVIOUS opens old secrets until reencrypt moves them all', async () => {
    await resetWebhooks(); // only this receiver: reencrypt refuses a secret under a key it does not hold
    const oldKey = Buffer.alloc(32, 1);
    const newKey = Buffer.alloc(32, 2);
    const before = createSecretKeyring({ current: oldKey });
    const sealed = before.seal(SECRET, '00000000-0000-4000-8000-0000000000aa');
    await testDb().pool.query(
      `insert into receiver (id, url, secret_ciphertext, secret_key_id, created_at) values ('00000000-0000-4000-8000-0000000000aa', 'https://rotate.example.org/', $1, $2, now())`,
      [sealed.ciphertext, sealed.keyId],
    );
    try {
      const during = createSecretKeyring({ current: newKey, previous: oldKey });
      const result = await reencryptSecrets(testDb().pool, during);
      expect(result).to.deep.include({ resealed: 1, underCurrentKey: 1 });
      expect(result.keyId).to.equal(keyIdOf(newKey));
      const row = (
        await testDb().pool.query(
          `select secret_ciphertext, secret_key_id from receiver where id = '00000000-0000-4000-8000-0000000000aa'`,
        )
      ).rows[0];
      expect(row.secret_key_id).to.equal(keyIdOf(newKey));
      expect(
        createSecretKeyring({ current: newKey }).open(
          { ciphertext: row.secret_ciphertext, keyId: row.secret_key_id },
          '00000000-0000-4000-8000-0000000000aa',
        ),
      ).to.equal(SECRET);
      // A sealed secret moved onto another receiver does not open (the receiver id is authenticated).
      expect(() =>
        during.open(
          { ciphertext: row.secret_ciphertext, keyId: row.secret_key_id },
          '00000000-0000-4000-8000-0000000000bb',
        ),
      ).to.throw(/does not authenticate/);
    } finally {
      await testDb().pool.query(`delete from receiver where id = '00000000-0000-4000-8000-0000000000aa'`);
    }
  });
});

describe('the secret encryption key', () => {
  it('is required in production, with a one-line message naming SECRET_ENCRYPTION_KEY; a malformed one is refused', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).to.throw(MISSING_SECRET_KEY);
    expect(() => loadConfig({ SECRET_ENCRYPTION_KEY: 'c2hvcnQ=' })).to.throw(
      /SECRET_ENCRYPTION_KEY: must be the base64 of exactly 32 bytes/,
    );
    expect(
      loadConfig({ NODE_ENV: 'production', SECRET_ENCRYPTION_KEY: Buffer.alloc(32, 3).toString('base64') }).secretKeys
        .key,
    ).to.deep.equal(Buffer.alloc(32, 3));
  });

  it('the service refuses to start in production without it (exit 78), before touching a database', async () => {
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFileChild(
        process.execPath,
        ['src/app/main.ts'],
        {
          env: {
            ...process.env,
            NODE_ENV: 'production',
            SECRET_ENCRYPTION_KEY: '',
            DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/none',
          },
        },
        (error, _stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stderr }),
      );
    });
    expect(result.code).to.equal(78);
    expect(result.stderr).to.include(MISSING_SECRET_KEY);
  });

  it('without one, outside production, is generated once under DATA_DIR (mode 0600) and reused', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'lods-key-'));
    try {
      const config = { secretKeys: { key: undefined, previous: undefined }, dataDir, databaseUrl: undefined };
      const first = await resolveSecretKeyring(config, silentLogger);
      const second = await resolveSecretKeyring(config, silentLogger);
      expect(second.currentKeyId).to.equal(first.currentKeyId);
      expect((await stat(join(dataDir, 'secret-key'))).mode & 0o777).to.equal(0o600);
      expect(Buffer.from((await readFile(join(dataDir, 'secret-key'), 'utf8')).trim(), 'base64')).to.have.length(32);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
