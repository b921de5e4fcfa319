import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { createTestKey, getJson } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';
import { captureLogger, type LogCapture, openEmptyDatabase, startApiWithLogger } from './ops-support.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const randomKey = () => `lods_${randomBytes(32).toString('base64url')}`;

/** Waits until the access line of `requestId` is written (it is written when the response closes). */
async function accessLine(capture: LogCapture, requestId: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 50; i++) {
    const line = capture.lines().find((l) => l.requestId === requestId && l.msg === 'request');
    if (line) return line;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no access log line for ${requestId}`);
}

describe('request ids and access logs', () => {
  const capture = captureLogger('debug');
  let api: Api;
  let key: string;
  before(async () => {
    api = await startApiWithLogger(capture.logger);
    key = await createTestKey(['catalog:read']);
  });
  after(() => api.close());

  it('echoes a sane incoming X-Request-Id and writes one access line with it', async () => {
    const record = await createRecord(api.writes);
    const res = await getJson(api, `/v1/learning-opportunities/${record.id}?fields=x`, key, {
      headers: { 'X-Request-Id': 'client-42.a:b' },
    });
    expect(res.status).to.equal(200);
    expect(res.headers.get('x-request-id')).to.equal('client-42.a:b');
    const line = await accessLine(capture, 'client-42.a:b');
    expect(line).to.include({
      level: 30,
      method: 'GET',
      route: '/v1/learning-opportunities/:id',
      path: `/v1/learning-opportunities/${record.id}`,
      status: 200,
    });
    expect(line.durationMs).to.be.a('number').that.is.at.least(0);
    expect(capture.lines().filter((l) => l.requestId === 'client-42.a:b' && l.msg === 'request')).to.have.length(1);
  });

  it('replaces a missing, too long or unsafe X-Request-Id, or one holding a key, with a generated UUID', async () => {
    for (const incoming of [undefined, 'x'.repeat(129), 'two words', 'a"b', 'line\tbreak', key, `id-${key}`]) {
      const headers: Record<string, string> = incoming === undefined ? {} : { 'X-Request-Id': incoming };
      const res = await getJson(api, '/healthz', null, { headers });
      const id = res.headers.get('x-request-id');
      expect(id, String(incoming)).to.match(UUID);
      await accessLine(capture, id!);
    }
    expect(capture.text(), 'the key is in no log line').not.to.contain(key.slice(5));
  });

  it('logs probes at debug and unknown paths under the route "unmatched"', async () => {
    const res = await getJson(api, '/readyz', null, { headers: { 'X-Request-Id': 'probe-1' } });
    const line = await accessLine(capture, 'probe-1');
    expect(line.level).to.equal(20);
    expect(line.route).to.equal('/readyz');
    expect(res.headers.get('x-request-id')).to.equal('probe-1');

    const missing = await getJson(api, '/nowhere', null, { headers: { 'X-Request-Id': 'lost-1' } });
    expectProblem(missing, 404);
    expect(await accessLine(capture, 'lost-1')).to.include({ level: 30, route: 'unmatched', status: 404 });
  });

  it('never logs the API key, the Authorization header or a key put in the query string (200, 401, 403)', async () => {
    const unscoped = await createTestKey(['graphql:read']);
    const unknown = randomKey();
    const record = await createRecord(api.writes);
    const calls = [
      { key, status: 200, path: `/v1/learning-opportunities/${record.id}` },
      { key: unscoped, status: 403, path: '/v1/learning-opportunities' },
      { key: unknown, status: 401, path: '/v1/learning-opportunities' },
      { key: null, status: 401, path: `/v1/learning-opportunities?api_key=${unknown}&access_token=${key}` },
    ];
    for (const call of calls) {
      const res = await getJson(api, call.path, call.key);
      expect(res.status, call.path).to.equal(call.status);
      await accessLine(capture, res.headers.get('x-request-id')!);
    }
    const malformed = await getJson(api, '/v1/learning-opportunities', null, {
      headers: { Authorization: `Token ${key}` },
    });
    expect(malformed.status).to.equal(401);
    await accessLine(capture, malformed.headers.get('x-request-id')!);

    const text = capture.text();
    for (const secret of [key, unscoped, unknown]) expect(text).not.to.contain(secret);
    expect(text).not.to.match(/bearer\s/i);
    expect(text).not.to.match(/authorization/i);
  });
});

describe('logs of a failing request (500)', () => {
  // A database without the service's tables: the key look-up fails with an unexpected error.
  const capture = captureLogger('info');
  let empty: Awaited<ReturnType<typeof openEmptyDatabase>>;
  let api: Api;
  before(async () => {
    empty = await openEmptyDatabase();
    api = await startApiWithLogger(capture.logger, empty.db);
  });
  after(async () => {
    await api?.close();
    await empty?.drop();
  });

  it('logs the error under the request id, without the key, and answers a generic 500', async () => {
    const key = randomKey();
    // On a loaded machine the first connection to the new database can outlast the connect timeout:
    // that request is a 503 "database unreachable" (also correct), so it is asked again, under a new id.
    let id = '';
    let res: Response | undefined;
    for (let attempt = 1; attempt <= 5 && (!res || res.status === 503); attempt++) {
      id = `boom-${attempt}`;
      res = await fetch(`${api.url}/v1/learning-opportunities`, {
        headers: { Authorization: `Bearer ${key}`, 'X-Request-Id': id },
      });
      if (res.status === 503) await res.text();
    }
    const problem = expectProblem({ status: res!.status, headers: res!.headers, text: await res!.text() }, 500);
    expect(problem.type).to.equal('/problems/internal');
    const line = await accessLine(capture, id);
    expect(line).to.include({ status: 500, route: '/v1/learning-opportunities' });
    const error = capture.lines().find((l) => l.requestId === id && l.msg === 'unhandled error');
    expect(error, 'error line with the request id').to.be.an('object');
    expect(error!.level).to.equal(50);
    expect(capture.text()).not.to.contain(key);
    expect(capture.text()).not.to.match(/bearer\s/i);
  });
});
