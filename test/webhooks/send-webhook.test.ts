// The sender resolves each receiver URL once and keeps the result: the requests must still go to the
// URL they were sent for (host, port, path and query), and a URL it can never send to must fail the
// attempt with a stable error class, every time, without connecting anywhere. A kept-alive connection
// that the receiver closes as it is reused is not a failed attempt: the request goes once more.
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { createWebhookSender } from '../../src/webhooks/delivery/send-webhook.ts';
import { startReceiver, type TestReceiver } from '../support/receiver.ts';

describe('webhook sender', () => {
  const receivers: TestReceiver[] = [];
  const sender = createWebhookSender({ timeoutMs: 2000, allowPrivateTargets: true });
  after(async () => {
    sender.close();
    for (const r of receivers) await r.close();
  });

  it('sends each request to the host, port, path and query of its own URL, however they interleave', async () => {
    const [a, b] = [await startReceiver('/a'), await startReceiver('/b')];
    receivers.push(a, b);
    const urls = [`${a.url}?tenant=1`, b.url, a.url, `${b.url}?x=%20y`, `${a.url}?tenant=1`];
    const results = [];
    for (const [i, url] of urls.entries())
      results.push(await sender.send(url, { 'x-n': String(i) }, Buffer.from(`body ${i}`)));
    expect(results.map((r) => r.outcome)).to.deep.equal(urls.map(() => 'success'));
    expect(a.requests.map((r) => [r.path, r.headers['x-n'], r.body.toString()])).to.deep.equal([
      ['/a?tenant=1', '0', 'body 0'],
      ['/a', '2', 'body 2'],
      ['/a?tenant=1', '4', 'body 4'],
    ]);
    expect(b.requests.map((r) => [r.path, r.headers['x-n']])).to.deep.equal([
      ['/b', '1'],
      ['/b?x=%20y', '3'],
    ]);
  });

  it('fails a URL it can never send to with a stable class, on every attempt', async () => {
    const strict = createWebhookSender({ timeoutMs: 2000, allowPrivateTargets: false });
    try {
      for (let i = 0; i < 2; i++) {
        expect(await sender.send('not a url', {}, Buffer.from('x'))).to.include({
          outcome: 'connection_error',
          error: 'invalid_url',
          statusCode: null,
        });
        expect(await sender.send('ftp://example.com/hook', {}, Buffer.from('x'))).to.include({
          outcome: 'connection_error',
          error: 'unsupported_protocol',
        });
        expect(await strict.send('http://127.0.0.1:9/hook', {}, Buffer.from('x'))).to.include({
          outcome: 'connection_error',
          error: 'private_target',
        });
      }
    } finally {
      strict.close();
    }
  });
});

/**
 * A receiver on raw TCP that answers the first request of each connection (keeping it alive) and, with
 * `dropReused`, closes the connection without an answer when a second request arrives on it: what a
 * receiver does whose idle timeout ends just as the sender reuses the connection. `dropAll` closes
 * every connection at its first request.
 */
async function droppingReceiver(mode: 'dropReused' | 'dropAll') {
  const seen: { connection: number; request: number }[] = [];
  let connections = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    const connection = ++connections;
    let requests = 0;
    let buffer = '';
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      // One request: headers, then a body of its content-length.
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/content-length: (\d+)/i.exec(buffer.slice(0, end))?.[1] ?? 0);
        if (buffer.length < end + 4 + length) return;
        buffer = buffer.slice(end + 4 + length);
        requests++;
        seen.push({ connection, request: requests });
        if (mode === 'dropAll' || requests > 1) return void socket.destroy();
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok');
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    seen,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('webhook sender and kept-alive connections', () => {
  it('sends a request once more, on a new connection, when the receiver closed the reused one unanswered', async () => {
    const receiver = await droppingReceiver('dropReused');
    const sender = createWebhookSender({ timeoutMs: 2000, allowPrivateTargets: true });
    try {
      const first = await sender.send(receiver.url, {}, Buffer.from('one'));
      const second = await sender.send(receiver.url, {}, Buffer.from('two'));
      expect([first.outcome, second.outcome]).to.deep.equal(['success', 'success']);
      // The second went out on the first connection (dropped unanswered), then on a second one.
      expect(receiver.seen).to.deep.equal([
        { connection: 1, request: 1 },
        { connection: 1, request: 2 },
        { connection: 2, request: 1 },
      ]);
    } finally {
      sender.close();
      await receiver.close();
    }
  });

  it('does not send again when a new connection is dropped: a connection_error, one request', async () => {
    const receiver = await droppingReceiver('dropAll');
    const sender = createWebhookSender({ timeoutMs: 2000, allowPrivateTargets: true });
    try {
      expect(await sender.send(receiver.url, {}, Buffer.from('one'))).to.include({
        outcome: 'connection_error',
        statusCode: null,
      });
      expect(receiver.seen).to.have.length(1);
    } finally {
      sender.close();
      await receiver.close();
    }
  });
});
