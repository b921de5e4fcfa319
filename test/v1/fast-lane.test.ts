// The fast lane (src/http/fast-lane.ts) answers a successful GET one without express: it must be
// indistinguishable from the express route, and everything else must still reach express.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Api } from '../../src/service.ts';
import { createTestKey, getJson, startTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';

const HEADERS = ['content-type', 'content-length'];

describe('GET one through the fast lane', () => {
  let api: Api;
  let key: string;
  before(async () => {
    api = await startTestApi();
    key = await createTestKey(['catalog:read']);
  });
  after(() => api.close());

  it('answers with the same headers as the express route (HEAD) and the stored bytes', async () => {
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

  it('leaves every other outcome to express: problem details for 401, 403, 400 and 404', async () => {
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
});
