// Real responses of every documented status, validated against schema/openapi.json: the document
// cannot drift from what the service answers.
import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, startTestApi, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { openEmptyDatabase } from '../ops/ops-support.ts';
import { type ProxiedApi, startProxiedApi } from '../support/proxied-api.ts';
import { HTTP_METHODS, type ObservedResponse, OpenApiValidator } from './openapi-validator.ts';
import { encodeCursor, FEED_START } from '../../src/feed/cursor.ts';
import { openSocket, type RawAnswer, readUntilClosed } from '../support/raw-http.ts';

type Call = { method?: string; path: string; key?: string | null; headers?: Record<string, string>; status: number };

async function call(baseUrl: string, c: Call): Promise<ObservedResponse> {
  const headers = new Headers(c.headers);
  if (c.key) headers.set('authorization', `Bearer ${c.key}`);
  const method = c.method ?? 'GET';
  const res = await fetch(`${baseUrl}${c.path}`, { method, headers });
  return { method, path: c.path, status: res.status, headers: res.headers, text: await res.text() };
}

/** Every problem of every call, so that one run shows all the drift at once. */
async function conformance(validator: OpenApiValidator, baseUrl: string, calls: Call[]): Promise<void> {
  const problems: string[] = [];
  for (const c of calls) {
    const res = await call(baseUrl, c);
    if (res.status !== c.status)
      problems.push(`${res.method} ${c.path}: expected ${c.status}, got ${res.status} ${res.text.slice(0, 200)}`);
    problems.push(...validator.check(res));
  }
  expect(problems, problems.join('\n')).to.deep.equal([]);
}

const NULLS = {
  summary: null,
  description: null,
  url: null,
  provider: null,
  language: null,
  topics: [],
  price: null,
  sessions: [
    {
      id: randomUUID(),
      startsAt: '2027-01-01T00:00:00Z',
      endsAt: null,
      timezone: null,
      format: null,
      location: { name: null, address: null, city: null, country: null },
      capacity: null,
    },
  ],
  deadlines: [{ id: randomUUID(), type: 'OTHER', dueAt: '2027-01-01T00:00:00.5Z', description: null }],
  faqs: [],
  externalReviews: [
    {
      id: randomUUID(),
      source: 'Somewhere',
      url: null,
      rating: null,
      maxRating: null,
      reviewCount: null,
      excerpt: null,
      reviewedAt: null,
    },
  ],
  accolades: [{ id: randomUUID(), title: 'Noted', issuer: null, awardedAt: null, url: null }],
};

describe('OpenAPI conformance of real responses', () => {
  const validator = new OpenApiValidator();

  describe('with the database up', () => {
    const served = useTestApi({ key: ['catalog:read'], unscoped: ['graphql:read'] });
    let full: { id: string };
    let sparse: { id: string };
    let headCursor: string;
    before(async () => {
      full = await createRecord(served.api.writes);
      sparse = await createRecord(served.api.writes, NULLS);
      await served.api.writes.archive(sparse.id);
      await served.api.writes.publish(sparse.id);
      await served.api.writes.delete((await createRecord(served.api.writes)).id); // a DELETED event (data null) in the feed
      // A watermark below every real event (transaction ids start at 3): nothing is hidden, but the
      // cursor (0, 0) is now older than the retained window.
      await testDb().pool.query(
        `update event_feed_pruned set xid = '0', position = 1 where (xid, position) < ('0'::xid8, 1)`,
      );
      headCursor = (
        JSON.parse((await call(served.api.url, { path: '/v1/events/head', key: served.key, status: 200 })).text) as {
          cursor: string;
        }
      ).cursor;
    });

    it('2xx: list pages, records with every field filled or null, HEAD, the document itself', async () => {
      await conformance(validator, served.api.url, [
        { path: '/v1/learning-opportunities', key: served.key, status: 200 },
        { path: '/v1/learning-opportunities?limit=100&offset=0', key: served.key, status: 200 },
        { path: '/v1/learning-opportunities?offset=999999999', key: served.key, status: 200 },
        { path: `/v1/learning-opportunities/${full.id}`, key: served.key, status: 200 },
        { path: `/v1/learning-opportunities/${sparse.id}`, key: served.key, status: 200 },
        { path: `/v1/learning-opportunities/${full.id.toUpperCase()}`, key: served.key, status: 200 },
        { method: 'HEAD', path: '/v1/learning-opportunities', key: served.key, status: 200 },
        { method: 'HEAD', path: `/v1/learning-opportunities/${full.id}`, key: served.key, status: 200 },
        { path: '/v1/openapi.json', status: 200 },
        { method: 'HEAD', path: '/v1/openapi.json', status: 200 },
        { path: '/v1/events', key: served.key, status: 200 },
        { path: '/v1/events?limit=1000', key: served.key, status: 200 },
        { path: '/v1/events?limit=1', key: served.key, status: 200 },
        { path: `/v1/events?after=${headCursor}&wait=0`, key: served.key, status: 200 },
        { path: '/v1/events/head', key: served.key, status: 200 },
        { method: 'HEAD', path: '/v1/events', key: served.key, status: 200 },
        { method: 'HEAD', path: '/v1/events/head', key: served.key, status: 200 },
      ]);
    });

    it('304 for a held ETag and 429 over the rate limit, with their headers', async () => {
      const limited = await createTestKey(['catalog:read'], undefined, 3);
      const etag = async (path: string) =>
        (await fetch(`${served.api.url}${path}`, { headers: { authorization: `Bearer ${limited}` } })).headers.get(
          'etag',
        )!;
      const one = `/v1/learning-opportunities/${full.id}`;
      await conformance(validator, served.api.url, [
        { path: one, key: limited, headers: { 'if-none-match': await etag(one) }, status: 304 },
        {
          method: 'HEAD',
          path: '/v1/learning-opportunities',
          key: limited,
          headers: { 'if-none-match': '*' },
          status: 304,
        },
        { path: one, key: limited, status: 429 },
        { method: 'HEAD', path: '/v1/learning-opportunities', key: limited, status: 429 },
        { path: '/v1/events', key: limited, status: 429 },
        { path: '/v1/events/head', key: limited, status: 429 },
      ]);
    });

    it('4xx: every problem response of the document, with its headers', async () => {
      await conformance(validator, served.api.url, [
        { path: '/v1/learning-opportunities?limit=0', key: served.key, status: 400 },
        { path: '/v1/learning-opportunities?limit=abc&offset=-1', key: served.key, status: 400 },
        { path: '/v1/learning-opportunities?limit=1&limit=2', key: served.key, status: 400 },
        { path: '/v1/learning-opportunities/not-a-uuid', key: served.key, status: 400 },
        { path: '/v1/learning-opportunities/%E0%A4%A', key: served.key, status: 400 },
        { method: 'HEAD', path: '/v1/learning-opportunities?limit=101', key: served.key, status: 400 },
        { path: '/v1/learning-opportunities', status: 401 },
        { path: '/v1/learning-opportunities', headers: { authorization: 'Basic abc' }, status: 401 },
        {
          path: `/v1/learning-opportunities/${full.id}`,
          key: `lods_${randomBytes(32).toString('base64url')}`,
          status: 401,
        },
        { method: 'HEAD', path: '/v1/learning-opportunities', status: 401 },
        { path: '/v1/learning-opportunities', key: served.unscoped, status: 403 },
        { path: `/v1/learning-opportunities/${full.id}`, key: served.unscoped, status: 403 },
        { path: `/v1/learning-opportunities/${randomUUID()}`, key: served.key, status: 404 },
        { method: 'HEAD', path: `/v1/learning-opportunities/${randomUUID()}`, key: served.key, status: 404 },
        { method: 'POST', path: '/v1/learning-opportunities', key: served.key, status: 405 },
        { method: 'DELETE', path: `/v1/learning-opportunities/${full.id}`, key: served.key, status: 405 },
        { method: 'PUT', path: '/v1/openapi.json', status: 405 },
        { path: '/v1/learning-opportunities', headers: { 'X-Request-Id': 'mine-1' }, key: served.key, status: 200 },
        { path: '/v1/events?limit=1001&wait=31', key: served.key, status: 400 },
        { path: '/v1/events?after=nope', key: served.key, status: 400 },
        { method: 'HEAD', path: '/v1/events?after=nope', key: served.key, status: 400 },
        { path: '/v1/events', status: 401 },
        { path: '/v1/events/head', status: 401 },
        { path: '/v1/events', key: served.unscoped, status: 403 },
        { path: '/v1/events/head', key: served.unscoped, status: 403 },
        // (0, 0) is below the watermark set in before(): expired.
        { path: `/v1/events?after=${encodeCursor(FEED_START)}`, key: served.key, status: 410 },
        { method: 'HEAD', path: `/v1/events?after=${encodeCursor(FEED_START)}`, key: served.key, status: 410 },
        { method: 'POST', path: '/v1/events', key: served.key, status: 405 },
        { method: 'PUT', path: '/v1/events/head', key: served.key, status: 405 },
      ]);
    });

    it('catches drift: a body or header that differs from the document is reported', async () => {
      const real = await call(served.api.url, {
        path: `/v1/learning-opportunities/${full.id}`,
        key: served.key,
        status: 200,
      });
      const record = JSON.parse(real.text) as Record<string, unknown>;
      const variants: Record<string, unknown>[] = [
        { ...record, extra: true },
        { ...record, summary: undefined },
        { ...record, updatedAt: '2026-01-01T00:00:00Z' },
        { ...record, updatedAt: '2026-01-01T00:00:00.000000Z' },
        { ...record, status: 'DRAFT' },
        { ...record, sessions: [{ ...(record.sessions as object[])[0], room: 'A1' }] },
      ];
      for (const variant of variants) {
        expect(validator.check({ ...real, text: JSON.stringify(variant) })).to.have.length.greaterThan(0);
      }
      const unauthorized = await call(served.api.url, { path: '/v1/learning-opportunities', status: 401 });
      const noChallenge = new Headers(unauthorized.headers);
      noChallenge.delete('www-authenticate');
      expect(validator.check({ ...unauthorized, headers: noChallenge }).join()).to.match(
        /missing header WWW-Authenticate/,
      );
      expect(validator.check({ ...unauthorized, status: 418 }).join()).to.match(/status not documented/);

      const badRequest = await call(served.api.url, {
        path: '/v1/learning-opportunities?limit=0',
        key: served.key,
        status: 400,
      });
      const problem = JSON.parse(badRequest.text) as Record<string, unknown>;
      for (const variant of [
        { ...problem, invalidParams: undefined },
        { ...problem, type: '/problems/not-found' },
        { ...problem, stack: 'at x' },
      ]) {
        expect(validator.check({ ...badRequest, text: JSON.stringify(variant) })).to.have.length.greaterThan(0);
      }
    });
  });

  describe('answered by the HTTP server before any route (408, 431), on every operation', () => {
    const HEADERS_TIMEOUT_MS = 300;
    let api: Api;
    before(async () => {
      api = await startTestApi({ http: { headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: 3000 } });
    });
    after(() => api?.close());

    const operations = Object.entries(validator.doc.paths).flatMap(([template, item]) =>
      HTTP_METHODS.filter((m) => m in item).map((m) => ({
        method: m.toUpperCase(),
        path: template.replace('{id}', randomUUID()),
      })),
    );

    /** What a client of `method` reads of a raw answer: no body after a HEAD (RFC 9110 9.3.2). */
    const observed = (method: string, path: string, answer: RawAnswer): ObservedResponse => ({
      method,
      path,
      status: answer.status ?? 0,
      headers: new Headers(answer.headers),
      text: method === 'HEAD' ? '' : answer.body,
    });

    /** Writes `request` and reads until the server closes the connection (it never ends the request itself). */
    async function exchange(request: string): Promise<RawAnswer> {
      const socket = await openSocket(api.url);
      const answer = readUntilClosed(socket);
      socket.write(request);
      return await answer;
    }

    it('431 for headers over the limit, and 408 for headers that never end, each as the document says', async () => {
      expect(operations.map((o) => o.method))
        .to.include('GET')
        .and.include('HEAD');
      const problems: string[] = [];
      const answers = await Promise.all(
        operations.flatMap(({ method, path }) => [
          exchange(`${method} ${path} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`).then(
            (answer) => ({ method, path, answer, status: 431 }),
          ),
          // The request line and one header, then nothing: cut at the headers timeout.
          exchange(`${method} ${path} HTTP/1.1\r\nHost: x\r\n`).then((answer) => ({
            method,
            path,
            answer,
            status: 408,
          })),
        ]),
      );
      for (const { method, path, answer, status } of answers) {
        if (answer.status !== status) problems.push(`${method} ${path}: expected ${status}, got ${answer.status}`);
        if (answer.headers.connection !== 'close')
          problems.push(`${method} ${path} -> ${status}: not Connection: close`);
        problems.push(...validator.check(observed(method, path, answer)));
      }
      expect(problems, problems.join('\n')).to.deep.equal([]);
    });
  });

  describe('5xx', () => {
    let proxied: ProxiedApi;
    // A database without the service's tables: the key look-up fails with an unexpected error.
    let empty: Awaited<ReturnType<typeof openEmptyDatabase>>;
    let emptyApi: Api;
    let key: string;
    before(async () => {
      key = await createTestKey(['catalog:read']);
      proxied = await startProxiedApi();
      empty = await openEmptyDatabase();
      emptyApi = await startTestApi({ db: empty.db });
    });
    after(async () => {
      await proxied?.close();
      await emptyApi?.close();
      await empty?.drop();
    });

    it('503 with Retry-After while the database is unreachable', async () => {
      proxied.proxy.cut();
      try {
        await conformance(validator, proxied.api.url, [
          { path: '/v1/learning-opportunities', key, status: 503 },
          { path: `/v1/learning-opportunities/${randomUUID()}`, key, status: 503 },
          { method: 'HEAD', path: '/v1/learning-opportunities', key, status: 503 },
          { path: '/v1/events', key, status: 503 },
          { path: '/v1/events/head', key, status: 503 },
        ]);
      } finally {
        proxied.proxy.restore();
      }
    });

    it('500 for an unexpected failure', async () => {
      await conformance(validator, emptyApi.url, [
        { path: '/v1/learning-opportunities', key, status: 500 },
        { method: 'HEAD', path: `/v1/learning-opportunities/${randomUUID()}`, key, status: 500 },
        { path: '/v1/events?wait=1', key, status: 500 },
      ]);
    });
  });
});
