// A client that sends its headers or its body too slowly is cut at the configured time (headers
// and whole request bounded separately), with a 408 problem; connections beyond the configured
// maximum are refused at once. Small limits keep the test fast.
import type { Socket } from 'node:net';
import { expect } from 'chai';
import { useTestApi } from '../support/api.ts';
import { expectProblem } from '../support/problem.ts';
import { openSocket, readUntilClosed } from '../support/raw-http.ts';

const HEADERS_TIMEOUT_MS = 400;
const REQUEST_TIMEOUT_MS = 3000;
// Node looks for expired requests every headersTimeout / 4 (http/http-server.ts), plus scheduling,
// which on a loaded 2-core machine can take a second or two: the bounds assert order (cut after its
// own timeout, the headers one well before the request one), not punctuality.
const SLACK_MS = 2000;

/** Writes `text` one byte every `everyMs` until the socket closes. */
function dribble(socket: Socket, text: string, everyMs: number): void {
  let i = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || i >= text.length) return clearInterval(timer);
    socket.write(text[i++]!);
  }, everyMs);
  socket.once('close', () => clearInterval(timer));
}

describe('slow clients and connection limits', () => {
  const served = useTestApi(['graphql:read'], {
    http: { headersTimeoutMs: HEADERS_TIMEOUT_MS, requestTimeoutMs: REQUEST_TIMEOUT_MS, maxConnections: 3 },
  });

  it('cuts a client dribbling its headers byte by byte after the headers timeout, with a 408 problem', async () => {
    const socket = await openSocket(served.api.url);
    const answer = readUntilClosed(socket);
    dribble(socket, `GET /healthz HTTP/1.1\r\nHost: x\r\n${'X-Slow: 1\r\n'.repeat(1000)}\r\n`, 20);
    const { status, headers, body, closedAfterMs } = await answer;
    expect(closedAfterMs).to.be.within(
      HEADERS_TIMEOUT_MS - 50,
      Math.min(HEADERS_TIMEOUT_MS + SLACK_MS, REQUEST_TIMEOUT_MS - 50),
    );
    expect(headers.connection).to.equal('close');
    expect(expectProblem({ status: status!, headers: new Headers(headers), text: body }, 408).type).to.equal(
      '/problems/request-timeout',
    );
  });

  it('cuts a client dribbling its body after the request timeout, not the headers timeout', async () => {
    const socket = await openSocket(served.api.url);
    const answer = readUntilClosed(socket);
    const body = JSON.stringify({ query: '{ __typename }' }).padEnd(200, ' ');
    socket.write(
      `POST /graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${served.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    dribble(socket, body, 20);
    const { status, closedAfterMs } = await answer;
    expect(status).to.equal(408);
    expect(closedAfterMs).to.be.within(REQUEST_TIMEOUT_MS - 50, REQUEST_TIMEOUT_MS + SLACK_MS);
  });

  it('refuses connections beyond HTTP_MAX_CONNECTIONS at once and serves again when one closes', async () => {
    const held = await Promise.all([1, 2, 3].map(() => openSocket(served.api.url)));
    const extra = await openSocket(served.api.url);
    const refused = await readUntilClosed(extra);
    expect(refused.text).to.equal('');
    expect(refused.closedAfterMs, 'closed at once (no 408: it was never a request)').to.be.below(2000);
    held.pop()!.destroy();
    const connections = () =>
      new Promise<number>((resolve, reject) =>
        served.api.server.getConnections((error, n) => (error ? reject(error) : resolve(n))),
      );
    while ((await connections()) >= 3) await new Promise(setImmediate); // until the server has seen the close
    const res = await fetch(`${served.api.url}/healthz`);
    expect(res.status).to.equal(200);
    for (const socket of held) socket.destroy();
  });
});
