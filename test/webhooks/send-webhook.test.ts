// The sender resolves each receiver URL once and keeps the result: the requests must still go to the
// URL they were sent for (host, port, path and query), and a URL it can never send to must fail the
// attempt with a stable error class, every time, without connecting anywhere.
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
