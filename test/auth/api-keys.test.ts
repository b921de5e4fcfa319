// API keys: at least 128 random bits, shown once, stored only as a hash, with validated scopes.
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { createApiKey, listApiKeys, parseScopes, revokeApiKey } from '../../src/auth/api-keys.ts';
import { AppError } from '../../src/kernel/errors.ts';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { getJson, refusedWithin, startTestApi } from '../support/api.ts';

const em = () => testDb().orm.em.fork();

async function rejects(work: () => Promise<unknown> | unknown): Promise<AppError> {
  try {
    await work();
  } catch (error) {
    expect(error).to.be.instanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected an AppError');
}

describe('API keys', () => {
  let api: Api;
  before(async () => {
    api = await startTestApi();
  });
  after(() => api.close());

  it('are random, long enough (>= 128 bits) and all different', async () => {
    const keys = await Promise.all(
      [1, 2, 3, 4, 5].map((i) => createApiKey(em(), { name: `k${i}`, scopes: ['catalog:read'] })),
    );
    for (const { key } of keys) {
      const [, secret] = /^lods_([A-Za-z0-9_-]+)$/.exec(key) ?? [];
      expect(secret, key).to.be.a('string');
      // base64url carries 6 bits per character
      expect(secret!.length * 6).to.be.at.least(128);
    }
    expect(new Set(keys.map((k) => k.key)).size).to.equal(keys.length);
    expect(new Set(keys.map((k) => k.id)).size).to.equal(keys.length);
  });

  it('are stored only as a hash: no column holds the key or its secret part', async () => {
    const created = await createApiKey(em(), { name: 'storage check', scopes: ['catalog:read', 'graphql:read'] });
    const secret = created.key.slice('lods_'.length);
    const { rows } = await testDb().pool.query(`select * from api_key where id = $1`, [created.id]);
    expect(rows).to.have.length(1);
    const stored = JSON.stringify(rows[0]);
    expect(stored).not.to.include(created.key);
    expect(stored).not.to.include(secret);
    expect(stored).not.to.include(Buffer.from(created.key).toString('base64'));
    expect(stored).not.to.include(Buffer.from(created.key).toString('hex'));
    // the hash is what is kept, and what a look-up matches
    expect(rows[0].key_hash).to.equal(createHash('sha256').update(created.key).digest('hex'));
    expect(rows[0].scopes).to.deep.equal(['catalog:read', 'graphql:read']);
  });

  it('are never listed with the key itself', async () => {
    const created = await createApiKey(em(), { name: 'list check', scopes: ['catalog:read'] });
    const listed = await listApiKeys(em());
    const mine = listed.find((k) => k.id === created.id);
    expect(mine).to.include({ name: 'list check', revokedAt: null });
    expect(mine).not.to.have.property('key');
    expect(JSON.stringify(listed)).not.to.include(created.key);
    expect(JSON.stringify(listed)).not.to.include(created.key.slice('lods_'.length));
  });

  it('work against the API until revoked (within milliseconds); revoking twice keeps the first revocation time', async () => {
    const created = await createApiKey(em(), { name: 'revoke check', scopes: ['catalog:read'] });
    expect((await getJson(api, '/v1/learning-opportunities?limit=1', created.key)).status).to.equal(200);
    const first = await revokeApiKey(em(), created.id);
    expect(first.revokedAt).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    await refusedWithin(() => getJson(api, '/v1/learning-opportunities?limit=1', created.key));
    const second = await revokeApiKey(em(), created.id);
    expect(second.revokedAt).to.equal(first.revokedAt);
  });

  it('reject unknown, missing scopes and a blank name; revoking an unknown id is NOT_FOUND', async () => {
    expect((await rejects(() => parseScopes(['catalog:read', 'catalog:admin']))).invalidParams).to.deep.include.members(
      [
        {
          name: 'scope',
          reason:
            'unknown scope catalog:admin; known: catalog:read, graphql:read, catalog:write, receivers:manage, calendar:read',
        },
      ],
    );
    expect((await rejects(() => parseScopes([]))).code).to.equal('BAD_USER_INPUT');
    expect(parseScopes(['graphql:read', 'graphql:read'])).to.deep.equal(['graphql:read']);
    expect((await rejects(() => createApiKey(em(), { name: '  ', scopes: ['catalog:read'] }))).code).to.equal(
      'BAD_USER_INPUT',
    );
    expect((await rejects(() => revokeApiKey(em(), '00000000-0000-4000-8000-000000000000'))).code).to.equal(
      'NOT_FOUND',
    );
  });
});
