// The /v1 reads are served on node:http in front of express (src/http/v1/), one handler per
// endpoint: every outcome is answered there, with one read per request at most, and a key that has
// been seen costs no round trip of its own (auth/key-cache.ts).
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { testDb } from '../hooks.ts';
import { recordStatements } from '../support/statement-recorder.ts';
import { createTestKey, getJson, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectInvalidParams } from '../support/problem.ts';

const HEADERS = ['content-type', 'content-length'];

describe('the /v1 read handlers', () => {
  const served = useTestApi(['catalog:read']);

  it('answers GET and HEAD with the same headers and the stored bytes', async () => {
    const record = await createRecord(served.api.writes);
    const path = `/v1/learning-opportunities/${record.id}`;
    const get = await getJson(served.api, path, served.key);
    const head = await getJson(served.api, path, served.key, { method: 'HEAD' });
    expect(get.status).to.equal(200);
    expect(head.status).to.equal(200);
    for (const name of HEADERS) expect(get.headers.get(name), name).to.equal(head.headers.get(name));
    expect(get.text).to.equal(await served.api.reads.getOne(record.id, 'public'));
    expect(get.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    expect(get.headers.get('x-powered-by')).to.equal(null);
  });

  it('sends a Content-Length equal to the UTF-8 bytes of every body, for text outside ASCII too', async () => {
    const record = await createRecord(served.api.writes, {
      title: 'Zürich – 東京 🎓 course',
      summary: 'naïve café, ½ price',
    });
    for (const path of [
      `/v1/learning-opportunities/${record.id}`,
      '/v1/learning-opportunities?limit=100',
      '/v1/learning-opportunities?offset=100000',
    ]) {
      const res = await fetch(`${served.api.url}${path}`, { headers: { authorization: `Bearer ${served.key}` } });
      const bytes = Buffer.from(await res.arrayBuffer());
      expect(res.status, path).to.equal(200);
      expect(Number(res.headers.get('content-length')), path).to.equal(bytes.length);
      expect(() => JSON.parse(bytes.toString('utf8')), path).not.to.throw();
    }
    const one = await getJson(served.api, `/v1/learning-opportunities/${record.id}`, served.key);
    expect((one.body as { title: string }).title).to.equal('Zürich – 東京 🎓 course');
  });

  it('keeps a sane incoming request id and ignores the query string', async () => {
    const record = await createRecord(served.api.writes);
    const res = await getJson(
      served.api,
      `/v1/learning-opportunities/${record.id.toUpperCase()}?fields=all`,
      served.key,
      {
        headers: { 'x-request-id': 'abc-123' },
      },
    );
    expect(res.status).to.equal(200);
    expect(res.headers.get('x-request-id')).to.equal('abc-123');
    expect((res.body as { id: string }).id).to.equal(record.id);
  });

  it('refuses a parameter of the record holding a NUL or a bad percent-encoding, naming it, as the list does', async () => {
    const record = await createRecord(served.api.writes);
    for (const [query, name] of [
      ['x=%00', 'x'],
      ['fields=a%00b', 'fields'],
      ['x=%zz', 'x'],
    ]) {
      const res = await getJson(served.api, `/v1/learning-opportunities/${record.id}?${query}`, served.key);
      expectInvalidParams(res, [name!]);
    }
  });

  it('answers every other outcome with problem details: 401, 403, 400 and 404', async () => {
    const record = await createRecord(served.api.writes);
    const unscoped = await createTestKey(['graphql:read']);
    const cases: [string, string | null, number][] = [
      [`/v1/learning-opportunities/${record.id}`, null, 401],
      [`/v1/learning-opportunities/${record.id}`, 'lods_not-a-real-key-at-all-but-well-formed-xxxxxx', 401],
      [`/v1/learning-opportunities/${record.id}`, unscoped, 403],
      ['/v1/learning-opportunities/not-a-uuid', served.key, 400],
      [`/v1/learning-opportunities/${randomUUID()}`, served.key, 404],
    ];
    for (const [path, k, status] of cases) {
      const res = await getJson(served.api, path, k);
      expect(res.status, `${path} with ${k ?? 'no key'}`).to.equal(status);
      expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
    }
  });

  it('runs the read once for a 200 and a 404, never for a 401, 403 or 400; a known key costs no statement of its own', async () => {
    const record = await createRecord(served.api.writes);
    const unscoped = await createTestKey(['graphql:read']);
    const cases: [string, string | null, number, number][] = [
      [`/v1/learning-opportunities/${record.id}`, served.key, 200, 1],
      [`/v1/learning-opportunities/${record.id}`, 'lods_not-a-real-key-at-all-but-well-formed-xxxxxx', 401, 0],
      [`/v1/learning-opportunities/${record.id}`, `lods_${'x'.repeat(43)}`, 401, 0],
      [`/v1/learning-opportunities/${record.id}`, unscoped, 403, 0],
      [`/v1/learning-opportunities/${randomUUID()}`, served.key, 404, 1],
      ['/v1/learning-opportunities?limit=5', unscoped, 403, 0],
      ['/v1/learning-opportunities?limit=5', served.key, 200, 1],
      ['/v1/learning-opportunities/not-a-uuid', served.key, 400, 0],
    ];
    const statements: string[] = [];
    const stopRecording = recordStatements(testDb().pool, (name) => statements.push(name));
    const reads = () => statements.filter((name) => name.startsWith('lo-'));
    try {
      // Once the process listens for key changes, a key it has seen is answered from memory: the
      // request is one statement, its read.
      const started = performance.now();
      for (;;) {
        statements.length = 0;
        expect((await getJson(served.api, `/v1/learning-opportunities/${record.id}`, served.key)).status).to.equal(200);
        if (statements.length === 1) break;
        expect(performance.now() - started, `statements of a request: ${statements.join(', ')}`).to.be.below(10_000);
      }
      expect(statements).to.deep.equal(['lo-one-public']);
      for (const [path, k, status, count] of cases) {
        statements.length = 0;
        expect((await getJson(served.api, path, k)).status, path).to.equal(status);
        expect(reads().length, `reads for ${status} ${path}`).to.equal(count);
      }
    } finally {
      stopRecording();
    }
  });
});
