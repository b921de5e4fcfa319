// The /v1 client against real, flaky HTTP servers: what is retried, how often, how long it waits,
// and what a caller gets back when it gives up.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import {
  type CatalogClientOptions,
  CatalogHttpError,
  CatalogNetworkError,
  CatalogResponseError,
  createCatalogClient,
  parseRetryAfter,
  type RetryInfo,
} from '@lods/client';
import {
  fakeRecord,
  resetConnection,
  type ScriptedServer,
  sendJson,
  sendProblem,
  startScriptedServer,
} from './fake-servers.ts';

const ID = '0b6f3f0e-4c2a-4d4e-9a57-3f1a2b3c4d5e';
const record = fakeRecord(ID, '2026-05-01T10:00:00.000Z');

// Short backoff so that the tests stay fast; the behaviour is the same with the defaults.
const fast = (server: ScriptedServer, options: Partial<CatalogClientOptions> = {}) =>
  createCatalogClient({ baseUrl: server.url, apiKey: 'test-key', minRetryDelayMs: 5, maxRetryDelayMs: 50, ...options });

async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the call to fail');
}

describe('client retries', () => {
  let server: ScriptedServer | null = null;
  afterEach(async () => {
    await server?.close();
    server = null;
  });

  /** Fails the first requests as `failures` says, then answers with the record. */
  const flaky = async (
    failures: ((req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void)[],
  ) =>
    (server = await startScriptedServer((n, req, res) =>
      n < failures.length ? failures[n]!(req, res) : sendJson(res, 200, record),
    ));
  const unavailable = (_req: unknown, res: import('node:http').ServerResponse) =>
    sendProblem(res, 503, 'Service temporarily unavailable', 'The database is unreachable');
  const internal = (_req: unknown, res: import('node:http').ServerResponse) =>
    sendProblem(res, 500, 'Internal server error', 'An unexpected error occurred');

  it('retries 503 and 500 until the service answers, then returns the record', async () => {
    const s = await flaky([unavailable, internal, unavailable]);
    const retries: RetryInfo[] = [];
    const got = await fast(s, { onRetry: (info) => retries.push(info) }).getLearningOpportunity(ID);
    expect(got).to.deep.equal(record);
    expect(s.requests).to.have.length(4);
    expect(retries.map((r) => r.attempt)).to.deep.equal([1, 2, 3]);
    expect(retries.map((r) => (r.error as CatalogHttpError).status)).to.deep.equal([503, 500, 503]);
  });

  it('retries a connection reset (no answer at all)', async () => {
    const s = await flaky([resetConnection, resetConnection]);
    expect(await fast(s).getLearningOpportunity(ID)).to.deep.equal(record);
    expect(s.requests).to.have.length(3);
  });

  it('waits for Retry-After on 429 before trying again', async () => {
    const s = await flaky([
      (_req, res) => sendProblem(res, 429, 'Too many requests', 'Slow down', { 'retry-after': '1' }),
    ]);
    const retries: RetryInfo[] = [];
    const started = performance.now();
    await fast(s, { maxRetryDelayMs: 5000, onRetry: (info) => retries.push(info) }).getLearningOpportunity(ID);
    const elapsed = performance.now() - started;
    expect(s.requests).to.have.length(2);
    expect(elapsed).to.be.at.least(950);
    expect(retries[0]!.delayMs).to.be.at.least(1000);
  });

  it('does not retry before a Retry-After longer than maxRetryDelayMs: gives up at once with that answer', async () => {
    const s = await flaky([
      (_req, res) => sendProblem(res, 503, 'Service temporarily unavailable', 'maintenance', { 'retry-after': '3600' }),
    ]);
    const retries: RetryInfo[] = [];
    const error = await rejectionOf(
      fast(s, { maxRetryDelayMs: 100, onRetry: (info) => retries.push(info) }).getLearningOpportunity(ID),
    );
    expect(error).to.be.instanceOf(CatalogHttpError).and.include({ status: 503, attempts: 1, retryAfterMs: 3_600_000 });
    expect((error as CatalogHttpError).problem?.detail).to.equal('maintenance');
    expect(retries).to.deep.equal([]);
    expect(s.requests).to.have.length(1);
  });

  it('by default waits out a Retry-After of 60 s (the longest the service sends: its limits count per minute), and can be cancelled while waiting', async () => {
    const s = await flaky([
      (_req, res) => sendProblem(res, 429, 'Too many requests', 'Slow down', { 'retry-after': '60' }),
    ]);
    const controller = new AbortController();
    const retries: RetryInfo[] = [];
    const client = createCatalogClient({ baseUrl: s.url, apiKey: 'k', onRetry: (info) => retries.push(info) });
    setTimeout(() => controller.abort(new Error('cancelled by the caller')), 200);
    const started = performance.now();
    const error = await rejectionOf(client.getLearningOpportunity(ID, { signal: controller.signal }));
    expect(error.message).to.equal('cancelled by the caller');
    expect(performance.now() - started, 'cancelled, not waited out').to.be.below(10_000);
    expect(retries.map((r) => r.delayMs)).to.deep.equal([60_000]);
    expect(s.requests).to.have.length(1);
  });

  it('gives up after the configured retries with the last error, its problem details and the attempt count', async () => {
    const s = await flaky(Array(10).fill(unavailable));
    const error = await rejectionOf(fast(s, { retries: 2 }).getLearningOpportunity(ID));
    expect(error).to.be.instanceOf(CatalogHttpError);
    const http = error as CatalogHttpError;
    expect(http.status).to.equal(503);
    expect(http.attempts).to.equal(3);
    expect(http.problem?.detail).to.equal('The database is unreachable');
    expect(s.requests).to.have.length(3);
  });

  for (const [status, title] of [
    [400, 'Invalid parameters'],
    [401, 'Missing or invalid API key'],
    [403, 'Insufficient scope'],
    [404, 'Not found'],
  ] as const) {
    it(`never retries a ${status}: one request, a typed error carrying the problem`, async () => {
      const s = await flaky(
        Array(5).fill((_req: unknown, res: import('node:http').ServerResponse) =>
          sendProblem(res, status, title, `detail for ${status}`),
        ),
      );
      const error = await rejectionOf(fast(s).getLearningOpportunity(ID));
      expect(s.requests).to.have.length(1);
      expect(error).to.be.instanceOf(CatalogHttpError);
      const http = error as CatalogHttpError;
      expect(http.status).to.equal(status);
      expect(http.attempts).to.equal(1);
      expect(http.retryable).to.equal(false);
      expect(http.problem).to.include({ title, status, detail: `detail for ${status}` });
      expect(http.message).to.contain(`detail for ${status}`);
    });
  }

  it('times out an attempt that gets no answer and retries it', async () => {
    // Answers only the third request; the first two hang past the client's timeout.
    const s = await flaky([() => {}, () => {}]);
    const got = await fast(s, { timeoutMs: 500 }).getLearningOpportunity(ID);
    expect(got.id).to.equal(ID);
    expect(s.requests).to.have.length(3);
  });

  it('reports a timeout as a CatalogNetworkError once the retries are spent', async () => {
    const s = await flaky(Array(5).fill(() => {}));
    const error = await rejectionOf(fast(s, { timeoutMs: 100, retries: 1 }).getLearningOpportunity(ID));
    expect(error).to.be.instanceOf(CatalogNetworkError);
    expect((error as CatalogNetworkError).timedOut).to.equal(true);
    expect((error as CatalogNetworkError).attempts).to.equal(2);
    expect(s.requests).to.have.length(2);
  });

  it('reports a refused connection as a CatalogNetworkError naming the cause', async () => {
    const s = await flaky([]);
    const url = s.url;
    await s.close();
    server = null;
    const error = await rejectionOf(
      createCatalogClient({ baseUrl: url, apiKey: 'k', retries: 1, minRetryDelayMs: 5 }).getLearningOpportunity(ID),
    );
    expect(error).to.be.instanceOf(CatalogNetworkError);
    expect(error.message).to.contain('ECONNREFUSED');
    expect((error as CatalogNetworkError).attempts).to.equal(2);
  });

  it('does not retry a 2xx that is not the service (not JSON, or not a record)', async () => {
    const s = (server = await startScriptedServer((n, _req, res) =>
      n === 0
        ? res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy</html>')
        : sendJson(res, 200, { hello: 'world' }),
    ));
    const client = fast(s);
    expect(await rejectionOf(client.getLearningOpportunity(ID))).to.be.instanceOf(CatalogResponseError);
    expect(await rejectionOf(client.listLearningOpportunities()))
      .to.be.instanceOf(CatalogResponseError)
      .and.have.property('message')
      .that.contains('not a page');
    expect(s.requests).to.have.length(2);
  });

  it('sends the key as a bearer credential, keeps a base path prefix and reports redirects instead of following them', async () => {
    const s = (server = await startScriptedServer((n, _req, res) =>
      n === 0
        ? sendJson(res, 200, { results: [record], pagination: { totalCount: 1, limit: 5, offset: 0 } })
        : res.writeHead(301, { location: 'https://elsewhere.example.org/' }).end(),
    ));
    const client = createCatalogClient({ baseUrl: `${s.url}/lods`, apiKey: 'secret-key', minRetryDelayMs: 5 });
    const page = await client.listLearningOpportunities({ limit: 5, offset: 0 });
    expect(page.results.map((r) => r.id)).to.deep.equal([ID]);
    expect(s.requests[0]).to.deep.equal({
      method: 'GET',
      url: '/lods/v1/learning-opportunities?limit=5&offset=0',
      authorization: 'Bearer secret-key',
    });

    const error = await rejectionOf(client.getLearningOpportunity(randomUUID()));
    expect(error).to.be.instanceOf(CatalogHttpError).and.have.property('status', 301);
    expect(error.message).to.contain('elsewhere.example.org');
    expect(s.requests).to.have.length(2);
  });

  it('stops retrying when the caller aborts', async () => {
    const s = await flaky(Array(50).fill(unavailable));
    const controller = new AbortController();
    const client = createCatalogClient({
      baseUrl: s.url,
      apiKey: 'k',
      retries: 50,
      minRetryDelayMs: 50,
      maxRetryDelayMs: 50,
    });
    setTimeout(() => controller.abort(new Error('cancelled by the caller')), 120);
    const error = await rejectionOf(client.getLearningOpportunity(ID, { signal: controller.signal }));
    expect(error.message).to.equal('cancelled by the caller');
    expect(s.requests.length).to.be.within(1, 4);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP dates, ignores anything else', () => {
    const now = Date.parse('2026-05-01T10:00:00.000Z');
    expect(parseRetryAfter('5', now)).to.equal(5000);
    expect(parseRetryAfter('Fri, 01 May 2026 10:00:30 GMT', now)).to.equal(30_000);
    expect(parseRetryAfter('Fri, 01 May 2026 09:00:00 GMT', now)).to.equal(0);
    expect(parseRetryAfter('soon', now)).to.equal(null);
    expect(parseRetryAfter(null, now)).to.equal(null);
  });
});
