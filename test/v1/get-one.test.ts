import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { getJson, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';

describe('GET /v1/learning-opportunities/{id}', () => {
  const served = useTestApi(['catalog:read']);

  it('returns the published record with every collection, timestamps to the millisecond', async () => {
    const record = await createRecord(served.api.writes);
    const res = await getJson(served.api, `/v1/learning-opportunities/${record.id}`, served.key);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^application\/json/);
    expect(res.body).to.deep.equal(record);
    const body = res.body as Record<string, unknown>;
    expect(body.status).to.equal('PUBLISHED');
    expect(body.updatedAt).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect((body.sessions as unknown[]).length).to.equal(2);
  });

  it('is 404 for a draft and for an unknown id, 400 for a malformed id', async () => {
    const draft = await createRecord(served.api.writes, {}, { publish: false });
    for (const id of [draft.id, randomUUID()]) {
      const res = await getJson(served.api, `/v1/learning-opportunities/${id}`, served.key);
      expect(res.status).to.equal(404);
      expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
    }
    const bad = await getJson(served.api, '/v1/learning-opportunities/not-a-uuid', served.key);
    expect(bad.status).to.equal(400);
    expect((bad.body as { invalidParams: unknown[] }).invalidParams).to.deep.equal([
      { name: 'id', reason: 'must be a UUID' },
    ]);
  });
});
