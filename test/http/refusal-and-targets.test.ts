// Raw-socket edges of admission (issue 18 items 8 and 9): a 401 or 403 answers with
// `Connection: close` and stops reading the refused body (it used to read and discard hundreds of
// MiB after the answer); `Expect: 100-continue` gets `100 Continue` only once the key is checked; an
// absolute-form request target (`GET http://host/v1/... HTTP/1.1`) is routed on its path.
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { openSocket, readUntilClosed } from '../support/raw-http.ts';

/** Writes 1 MiB chunks (as fast as the connection takes them) until it closes or `forMs` passed; the bytes written. */
async function pushBody(socket: Socket, forMs: number): Promise<{ written: number; closed: boolean }> {
  const chunk = Buffer.alloc(1 << 20, 'a');
  const closing = once(socket, 'close').catch(() => {});
  const deadline = performance.now() + forMs;
  let written = 0;
  while (socket.writable && performance.now() < deadline) {
    const more = socket.write(chunk, () => {});
    written += chunk.length;
    if (!more)
      await Promise.race([
        once(socket, 'drain').catch(() => {}),
        closing,
        sleep(Math.max(1, deadline - performance.now())),
      ]);
  }
  await Promise.race([closing, sleep(Math.max(1, deadline - performance.now()))]);
  const closed = socket.destroyed;
  return { written, closed };
}

/** The first bytes the server sends (the status line and headers of its first answer). */
async function firstAnswer(socket: Socket): Promise<string> {
  let text = '';
  for await (const chunk of socket) {
    text += (chunk as Buffer).toString('latin1');
    if (text.includes('\r\n\r\n')) return text;
  }
  return text;
}

describe('refusals and request targets on raw connections', function () {
  this.timeout(30_000);
  const served = useTestApi({ readKey: ['catalog:read'], graphqlKey: ['graphql:read'] });
  let host: string;
  let id: string;
  before(async () => {
    host = new URL(served.api.url).host;
    id = (await createRecord(served.api.writes)).id;
  });

  const refusals = [
    { what: 'POST /graphql without a key (401)', line: 'POST /graphql', auth: () => '', status: 401 },
    {
      what: 'POST /graphql with a catalog:read key (403)',
      line: 'POST /graphql',
      auth: () => `Authorization: Bearer ${served.readKey}\r\n`,
      status: 403,
    },
    {
      what: 'GET /v1/learning-opportunities with a body and a graphql:read key (403)',
      line: 'GET /v1/learning-opportunities',
      auth: () => `Authorization: Bearer ${served.graphqlKey}\r\n`,
      status: 403,
    },
    {
      what: 'GET /v1/events with a body and an unknown key (401)',
      line: 'GET /v1/events',
      auth: () => `Authorization: Bearer lods_${'x'.repeat(43)}\r\n`,
      status: 401,
    },
  ];
  for (const { what, line, auth, status } of refusals) {
    it(`answers ${what} with Connection: close and stops reading the body`, async () => {
      const socket = await openSocket(served.api.url);
      const answer = readUntilClosed(socket);
      socket.write(
        `${line} HTTP/1.1\r\nHost: ${host}\r\n${auth()}Content-Type: application/json\r\nContent-Length: ${2 ** 30}\r\n\r\n`,
      );
      const pushed = await pushBody(socket, 5000);
      const { status: answered, headers } = await answer;
      expect(answered).to.equal(status);
      expect(headers.connection).to.equal('close');
      // Socket buffers take some MiB; a server still reading takes hundreds in 5 s.
      expect(pushed.closed, `still open after ${Math.round(pushed.written / 2 ** 20)} MiB`).to.equal(true);
      expect(pushed.written).to.be.below(64 << 20);
    });
  }

  it('checks the key before sending 100 Continue: a bad key gets its 401 and no 100', async () => {
    const socket = await openSocket(served.api.url);
    socket.write(
      `POST /graphql HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer lods_${'y'.repeat(43)}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n`,
    );
    const first = await firstAnswer(socket);
    expect(first).to.match(/^HTTP\/1\.1 401 /);
    expect(first.toLowerCase()).to.contain('connection: close');
    socket.destroy();

    const forbidden = await openSocket(served.api.url);
    forbidden.write(
      `GET /v1/learning-opportunities HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${served.graphqlKey}\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n`,
    );
    expect(await firstAnswer(forbidden)).to.match(/^HTTP\/1\.1 403 /);
    forbidden.destroy();
  });

  it('sends 100 Continue to a live key holding the scope, then serves the request', async () => {
    const socket = await openSocket(served.api.url);
    const body = JSON.stringify({ query: '{ learningOpportunities(limit: 1) { results { id } } }' });
    socket.write(
      `POST /graphql HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${served.graphqlKey}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
    );
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
    await new Promise<void>((resolve) => socket.on('data', () => text.includes('\r\n\r\n') && resolve()));
    expect(text).to.match(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
    socket.write(body);
    await once(socket, 'close');
    expect(text.slice(text.indexOf('\r\n\r\n') + 4)).to.match(/^HTTP\/1\.1 200 /);
    expect(text).to.contain('"results"');
  });

  it('routes absolute-form targets of the /v1 reads on their path', async () => {
    for (const [target, expected] of [
      [`http://${host}/v1/learning-opportunities?limit=1`, '"results"'],
      [`http://${host}/v1/learning-opportunities/${id}`, `"id":"${id}"`],
      [`http://${host}/v1/events/head`, '"cursor"'],
    ] as const) {
      const socket = await openSocket(served.api.url);
      const answer = readUntilClosed(socket);
      socket.write(
        `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${served.readKey}\r\nConnection: close\r\n\r\n`,
      );
      const { status, body } = await answer;
      expect(status, target).to.equal(200);
      expect(body, target).to.contain(expected);
    }
  });

  it('never echoes a key from an absolute-form target in a problem', async () => {
    for (const target of [
      `http://${host}/v1/calendar.ics/?key=${served.readKey}`,
      `http://${host}/v1/nope?key=${served.readKey}&limit=1`,
    ]) {
      const socket = await openSocket(served.api.url);
      const answer = readUntilClosed(socket);
      socket.write(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      const { status, body } = await answer;
      expect(status, target).to.equal(404);
      expect(body, target).to.contain('"instance"').and.not.to.contain(served.readKey);
    }
  });
});
