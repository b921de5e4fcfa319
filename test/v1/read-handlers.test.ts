// The /v1 reads are served on node:http in front of express (src/http/v1-reads.ts), one handler per
// endpoint: every outcome is answered there, with one keyed read per request at most.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { QueryConfig } from 'pg';
import type { Api } from '../../src/service.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson, startTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';

const HEADERS = ['content-type', 'content-length'];

describe('the /v1 read handlers', () => {
  let api: Api;
  let key: string;
  before(async () => {
    api = await startTestApi();
    key = await createTestKey(['catalog:read']);
  });
  after(() => api.close());

  it('answers GET and HEAD with the same headers and the stored bytes', async () => {
    const record = await createRecord(api.writes);
    const path = `/v1/learning-opportunities/${record.id}`;
    const get = await getJson(api, path, key);
    const head = await getJson(api, path, key, { method: 'HEAD' });
    expect(get.status).to.equal(200);
    expect(head.status).to.equal(200);
    for (const name of HEADERS) expect(get.headers.get(name), name).to.equal(head.headers.get(name));
    expect(get.text).to.equal(await api.reads.getOne(record.id, 'public'));
    expect(get.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    expect(get.headers.get('x-powered-by')).to.equal(null);
  });

  it('keeps a sane incoming request id and ignores the query string', async () => {
    const record = await createRecord(api.writes);
    const res = await getJson(api, `/v1/learning-opportunities/${record.id.toUpperCase()}?fields=all`, key, { headers: { 'x-request-id': 'abc-123' } });
    expect(res.status).to.equal(200);
    expect(res.headers.get('x-request-id')).to.equal('abc-123');
    expect((res.body as { id: string }).id).to.equal(record.id);
  });

  it('answers every other outcome with problem details: 401, 403, 400 and 404', async () => {
    const record = await createRecord(api.writes);
    const unscoped = await createTestKey(['graphql:read']);
    const cases: [string, string | null, number][] = [
      [`/v1/learning-opportunities/${record.id}`, null, 401],
      [`/v1/learning-opportunities/${record.id}`, 'lods_not-a-real-key-at-all-but-well-formed-xxxxxx', 401],
      [`/v1/learning-opportunities/${record.id}`, unscoped, 403],
      ['/v1/learning-opportunities/not-a-uuid', key, 400],
      [`/v1/learning-opportunities/${randomUUID()}`, key, 404],
    ];
    for (const [path, k, status] of cases) {
      const res = await getJson(api, path, k);
      expect(res.status, `${path} with ${k ?? 'no key'}`).to.equal(status);
      expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
    }
  });

  it('runs the keyed read once for a 200, 401, 403 and 404, and not at all for a 400', async () => {
    const record = await createRecord(api.writes);
    const unscoped = await createTestKey(['graphql:read']);
    const cases: [string, string | null, number, number][] = [
      [`/v1/learning-opportunities/${record.id}`, key, 200, 1],
      [`/v1/learning-opportunities/${record.id}`, 'lods_not-a-real-key-at-all-but-well-formed-xxxxxx', 401, 0],
      [`/v1/learning-opportunities/${record.id}`, `lods_${'x'.repeat(43)}`, 401, 1],
      [`/v1/learning-opportunities/${record.id}`, unscoped, 403, 1],
      [`/v1/learning-opportunities/${randomUUID()}`, key, 404, 1],
      ['/v1/learning-opportunities?limit=5', unscoped, 403, 1],
      ['/v1/learning-opportunities/not-a-uuid', key, 400, 0],
    ];
    const pool = testDb().pool;
    const query = pool.query;
    const keyedReads: string[] = [];
    pool.query = function (this: typeof pool, ...args: unknown[]) {
      const name = (args[0] as QueryConfig).name;
      if (name?.startsWith('keyed-')) keyedReads.push(name);
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof pool.query;
    try {
      for (const [path, k, status, reads] of cases) {
        keyedReads.length = 0;
        expect((await getJson(api, path, k)).status, path).to.equal(status);
        expect(keyedReads.length, `keyed reads for ${status} ${path}`).to.equal(reads);
      }
    } finally {
      pool.query = query;
    }
  });
});
