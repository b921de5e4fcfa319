// What a key's request reserves of the response pace (http/response-pacing.ts), on the pace's own
// clock: the size of the key's last answer with a body, at most the burst. Seen in review before:
// one answer larger than the burst plus 10 s of the pace refused every later request of its key for
// good (Retry-After 10, again and again); a 304 or an error let the next large pages through
// together; a client gone during its key's look-up left a reservation that was never given back; a
// HEAD, whose page is made as a GET's, was charged nothing (found from outside: 13 MB/s of HEADs).
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { expect } from 'chai';
import { createResponsePacing, type ResponsePacing } from '../../src/http/response-pacing.ts';
import { AppError, ClientGone } from '../../src/kernel/errors.ts';

const KIB = 1024;

/** A response as the pace sees it: closed when told, with its status and Content-Length. */
class FakeResponse extends EventEmitter {
  closed = false;
  writableFinished = false;
  statusCode = 200;
  private length = 0;
  getHeader(name: string) {
    return name === 'content-length' ? String(this.length) : undefined;
  }
  /** The answer went out whole: `bytes` of body with `status`. */
  answer(bytes: number, status = 200) {
    this.length = bytes;
    this.statusCode = status;
    this.writableFinished = true;
    this.closed = true;
    this.emit('close');
  }
}

function serve(pacing: ResponsePacing, method = 'GET', res = new FakeResponse()) {
  const served = pacing.serve('key', { method } as IncomingMessage, res as unknown as ServerResponse);
  return { res, served };
}

/** How long `served` took to settle (ms), or null when it had not within `withinMs`. */
async function settledWithin(served: Promise<void>, withinMs: number): Promise<number | null> {
  const started = performance.now();
  const timer = new Promise<null>((done) => setTimeout(() => done(null), withinMs));
  return Promise.race([served.then(() => performance.now() - started), timer]);
}

describe('what a request reserves of its key’s response pace', () => {
  let clock = 0;
  const now = () => clock;
  beforeEach(() => {
    clock = 1_000_000;
  });

  it('a key that got one answer larger than the burst plus 10 s of the pace is served again once it is paid for', async () => {
    const pacing = createResponsePacing({ bytesPerSecond: 100 * KIB, burstBytes: 1024 * KIB, now })!;
    const first = serve(pacing);
    await first.served;
    first.res.answer(3 * 1024 * KIB); // 30 s of the pace; 20 s past the burst

    const refused = await serve(pacing).served.catch((error: unknown) => error);
    expect(refused).to.be.instanceOf(AppError).with.property('code', 'RATE_LIMITED');

    clock += 60_000; // the debt is paid
    const later = serve(pacing);
    expect(await settledWithin(later.served, 200), 'served at once').to.be.a('number');
  });

  for (const [what, status] of [
    ['a 304', 304],
    ['an error', 404],
  ] as const)
    it(`${what} between a key's large pages does not let the next ones through together`, async () => {
      const pacing = createResponsePacing({ bytesPerSecond: 1024 * KIB, burstBytes: 1024 * KIB, now })!;
      const page = serve(pacing);
      await page.served;
      page.res.answer(1024 * KIB); // the burst, spent
      const small = serve(pacing);
      await small.served.catch(() => {});
      small.res.answer(status === 304 ? 0 : 200, status);

      // The next page reserves 1 MiB: due 1 s from now on the pace's clock.
      const next = serve(pacing);
      expect(await settledWithin(next.served, 300), 'the next page waits for its bytes').to.equal(null);
      next.res.answer(1024 * KIB);
    });

  it('a HEAD is charged the bytes of the page it made, as a GET is', async () => {
    const pacing = createResponsePacing({ bytesPerSecond: 1024 * KIB, burstBytes: 1024 * KIB, now })!;
    const heads = [serve(pacing, 'HEAD'), serve(pacing, 'HEAD')];
    await heads[0]!.served;
    heads[0]!.res.answer(1024 * KIB); // its Content-Length: the burst, spent
    await heads[1]!.served;
    heads[1]!.res.answer(1024 * KIB);
    const next = serve(pacing, 'HEAD');
    expect(await settledWithin(next.served, 300), 'the next HEAD waits for the bytes before it').to.equal(null);
    next.res.answer(1024 * KIB);
  });

  it('a client gone before it is served reserves nothing', async () => {
    const pacing = createResponsePacing({ bytesPerSecond: 1024 * KIB, burstBytes: 1024 * KIB, now })!;
    const page = serve(pacing);
    await page.served;
    page.res.answer(1024 * KIB);
    clock += 1_000; // paid

    const gone = Array.from({ length: 11 }, () => {
      const res = new FakeResponse();
      res.closed = true;
      return serve(pacing, 'GET', res).served.catch((error: unknown) => error);
    });
    expect(await settledWithin(serve(pacing).served, 200), 'the key is served at once').to.be.a('number');
    for (const error of await Promise.all(gone)) expect(error).to.be.instanceOf(ClientGone);
  });
});
