// Requests that Node's HTTP parser refuses before any route sees them (headers too large,
// malformed HTTP) are answered as problem+json with Connection: close, not with a bare status line.
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { getJson, startTestApi } from '../support/api.ts';
import { expectProblem } from '../support/problem.ts';
import { openSocket, type RawAnswer, readUntilClosed } from '../support/raw-http.ts';

describe('HTTP parser errors', () => {
  let api: Api;
  before(async () => {
    api = await startTestApi();
  });
  after(() => api.close());

  const send = async (request: string): Promise<RawAnswer> => {
    const socket = await openSocket(api.url);
    const answer = readUntilClosed(socket);
    socket.write(request);
    return await answer;
  };
  const expectRawProblem = (answer: RawAnswer, status: number) => {
    expect(answer.status, answer.text.slice(0, 200)).to.equal(status);
    expect(answer.headers.connection).to.equal('close');
    expect(Number(answer.headers['content-length'])).to.equal(Buffer.byteLength(answer.body));
    expect(answer.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
    const problem = expectProblem(
      { status: answer.status!, headers: new Headers(answer.headers), text: answer.body },
      status,
    );
    expect(problem.instance).to.equal(`urn:uuid:${answer.headers['x-request-id']}`);
    return problem;
  };

  for (const path of ['/v1/learning-opportunities', '/graphql', '/healthz']) {
    it(`answers headers over the limit on ${path} with a 431 problem and closes`, async () => {
      const answer = await send(`GET ${path} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
      const problem = expectRawProblem(answer, 431);
      expect(problem.type).to.equal('/problems/request-header-fields-too-large');
    });
  }

  it('answers an Expect other than 100-continue with a 417 problem naming Expect, and closes', async () => {
    // Node answered a bare 417: no body, no Content-Type, no X-Request-Id.
    for (const path of ['/v1/learning-opportunities', '/graphql', '/healthz']) {
      const problem = expectRawProblem(await send(`GET ${path} HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n`), 417);
      expect(problem.type).to.equal('/problems/expectation-failed');
      expect(problem.invalidParams).to.deep.equal([{ name: 'Expect', reason: 'only 100-continue is understood' }]);
    }
    // The caller's request id is kept, as for every answer; HEAD gets the status without a body.
    const traced = await send('GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nX-Request-Id: trace-417\r\n\r\n');
    expect([traced.status, traced.headers['x-request-id']]).to.deep.equal([417, 'trace-417']);
    const head = await send('HEAD /v1/learning-opportunities HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n');
    expect([head.status, head.body, head.headers.connection]).to.deep.equal([417, '', 'close']);
    // Without a Host, the Host is what is wrong (RFC 9112): 400, not 417.
    const hostless = expectRawProblem(await send('GET /healthz HTTP/1.1\r\nExpect: foo\r\n\r\n'), 400);
    expect(hostless.invalidParams).to.deep.equal([{ name: 'Host', reason: 'is required in HTTP/1.1' }]);
  });

  it('answers a malformed request with a 400 problem naming the request', async () => {
    for (const request of [
      'GARBAGE\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
    ]) {
      const problem = expectRawProblem(await send(request), 400);
      expect(problem.invalidParams).to.deep.equal([{ name: 'request', reason: 'is not valid HTTP/1.1' }]);
    }
  });

  it('refuses an HTTP/1.1 request without Host, with two Host lines or with an invalid Host: 400 problems naming Host (RFC 9112)', async () => {
    for (const [headers, reason] of [
      ['', 'is required in HTTP/1.1'],
      ['Host: a\r\nHost: b\r\n', 'must be sent once'],
      ['Host: a b\r\n', 'must be a host name or address, with an optional port'],
      ['Host: a/b@c\r\n', 'must be a host name or address, with an optional port'],
    ] as const) {
      for (const path of ['/v1/learning-opportunities?limit=1', '/graphql', '/healthz']) {
        const problem = expectRawProblem(await send(`GET ${path} HTTP/1.1\r\n${headers}\r\n`), 400);
        expect(problem.invalidParams, `${path} ${headers}`).to.deep.equal([{ name: 'Host', reason }]);
      }
    }
    // Valid forms are served: a name with a port, an IPv4 and an IPv6 address; HTTP/1.0 needs no Host.
    for (const request of [
      'GET /healthz HTTP/1.1\r\nHost: api.example.org:8080\r\nConnection: close\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: [::1]:3000\r\nConnection: close\r\n\r\n',
      'GET /healthz HTTP/1.0\r\n\r\n',
    ])
      expect((await send(request)).status, request).to.equal(200);
  });

  it('answers a malformed request that follows a served one on the same connection', async () => {
    const socket = await openSocket(api.url);
    const answer = readUntilClosed(socket);
    const served = new Promise<void>((resolve) =>
      socket.on('data', (chunk: Buffer) => chunk.toString().includes('"status":"ok"') && resolve()),
    );
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await served;
    socket.write('GARBAGE\r\n\r\n');
    const { text } = await answer;
    expect(text).to.match(/^HTTP\/1\.1 200 OK\r\n/);
    const second = text.slice(text.indexOf('HTTP/1.1', 1));
    expect(second).to.match(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(second).to.contain('Content-Type: application/problem+json');
  });

  it('documents the new problem types', async () => {
    for (const slug of ['request-header-fields-too-large', 'request-timeout', 'query-too-complex']) {
      expect((await getJson(api, `/problems/${slug}`, null)).status, slug).to.equal(200);
    }
  });
});
