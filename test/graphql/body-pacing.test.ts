// The per-key pace of GraphQL request bodies (graphql/body-pacing.ts, issue 18 item 4): within the
// burst a body is read at once; beyond it the next body waits unread until its bytes are due; one
// that would wait over 10 s is refused at once (429 problem, Retry-After, connection closed); other
// keys are not held back; a chunked body (no Content-Length) is paced the same way: it waits for the
// key's debt before it is read, and its bytes are charged as they are read, reading paused while the
// key is in debt.
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import pg from 'pg';
import type { Api } from '../../src/app/service.ts';
import { MAX_WAIT_MS, createBytePace } from '../../src/kernel/byte-pace.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, startTestApi } from '../support/api.ts';
import { openSocket } from '../support/raw-http.ts';
import { expectProblem } from '../support/problem.ts';

const KIB = 1024;
const RATE = 256 * KIB; // bytes a second
const BURST = 256 * KIB;

/** A `{ __typename }` request body of about `bytes` (the padding is a variable, so tokens stay few). */
const bodyOf = (bytes: number) => JSON.stringify({ query: '{ __typename }', variables: { pad: 'x'.repeat(bytes) } });

describe('GraphQL body pacing', function () {
  this.timeout(60_000);
  let api: Api;
  before(async () => {
    // The response pace off: it turns away a client gone during its key's look-up before the body's
    // pace sees it, and the body's own handling of that client is what these tests check.
    api = await startTestApi({
      graphql: { bodyPace: { bytesPerSecond: RATE, burstBytes: BURST } },
      http: { responsePace: { bytesPerSecond: 0, burstBytes: 0 } },
    });
  });
  after(() => api.close());

  const post = async (key: string, body: string | Uint8Array<ArrayBuffer>, headers: Record<string, string> = {}) => {
    const started = performance.now();
    const res = await fetch(`${api.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, ms: performance.now() - started };
  };

  it("reads a key's bodies at its pace once past the burst, without holding back other keys", async () => {
    const [busy, other] = [await createTestKey(['graphql:read']), await createTestKey(['graphql:read'])];
    const body = bodyOf(200 * KIB);
    const started = performance.now();
    // Three bodies of 200 KiB at 256 KiB/s after a 256 KiB burst: the first at once, the second
    // due after ~0.56 s, the third after ~1.3 s.
    const sent = [post(busy, body), post(busy, body), post(busy, body)];
    const small = await post(other, '{"query":"{ __typename }"}');
    const answers = await Promise.all(sent);
    const finishedAt = performance.now() - started;
    for (const answer of answers) expect(JSON.parse(answer.text)).to.deep.equal({ data: { __typename: 'Query' } });
    const times = answers.map((a) => a.ms).sort((a, b) => a - b);
    expect(times[0], 'the first body, within the burst').to.be.below(times[2]! - 600);
    expect(finishedAt, 'three bodies took their bytes’ time').to.be.at.least(1200);
    expect(small.status).to.equal(200);
    expect(small.ms, 'another key is not paced by this one').to.be.below(times[2]!);
  });

  it('refuses at once, unread, a body that would wait over 10 s: 429 problem with Retry-After, connection closed', async () => {
    const key = await createTestKey(['graphql:read']);
    // 3 MiB at 256 KiB/s past a 256 KiB burst: ~11 s of waiting.
    const refused = await post(key, bodyOf(3 * 1024 * KIB));
    const problem = expectProblem(refused, 429);
    expect(problem.type).to.equal('/problems/rate-limited');
    expect(problem.detail).to.match(/GraphQL request bodies faster than its pace/);
    expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 10);
    expect(refused.headers.get('connection')).to.equal('close');
    // Nothing was reserved for it: a body within the burst is still read at once.
    const next = await post(key, bodyOf(100 * KIB));
    expect(next.status).to.equal(200);
  });

  /** POSTs `body` chunked (node:http, no Content-Length), written in 64 KiB chunks at once. */
  const postChunked = (key: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; headers: Record<string, unknown>; text: string; ms: number }>((resolve, reject) => {
      const started = performance.now();
      const url = new URL(`${api.url}/graphql`);
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: '/graphql',
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode!, headers: res.headers, text, ms: performance.now() - started }),
          );
        },
      );
      req.on('error', reject);
      for (let i = 0; i < body.length; i += 64 * KIB) req.write(body.slice(i, i + 64 * KIB));
      req.end();
    });

  it("reads a key's chunked bodies (no Content-Length) at its pace once past the burst, like bodies with one", async () => {
    const [busy, other] = [await createTestKey(['graphql:read']), await createTestKey(['graphql:read'])];
    const body = bodyOf(200 * KIB);
    const started = performance.now();
    // Three chunked bodies of 200 KiB at 256 KiB/s after a 256 KiB burst: ~1.3 s for the 344 KiB
    // past the burst. Unpaced, they took a few ms.
    const sent = [postChunked(busy, body), postChunked(busy, body), postChunked(busy, body)];
    const small = await post(other, '{"query":"{ __typename }"}');
    const answers = await Promise.all(sent);
    const finishedAt = performance.now() - started;
    for (const answer of answers) expect(JSON.parse(answer.text)).to.deep.equal({ data: { __typename: 'Query' } });
    expect(finishedAt, 'three chunked bodies took their bytes’ time').to.be.at.least(0.6 * 1340);
    expect(small.status).to.equal(200);
    expect(small.ms, 'another key is not paced by this one').to.be.below(finishedAt);
  });

  it('reads one large chunked body at the pace: its bytes past the burst wait while it is read', async () => {
    const key = await createTestKey(['graphql:read']);
    // 768 KiB at 256 KiB/s past a 256 KiB burst: ~2 s. Unpaced, it was read at once.
    const chunked = await postChunked(key, bodyOf(768 * KIB));
    expect(chunked.status).to.equal(200);
    expect(chunked.ms).to.be.at.least(0.6 * 2000);
  });

  it('holds a chunked body, unread, while the key is in debt', async () => {
    const key = await createTestKey(['graphql:read']);
    // A 768 KiB body with Content-Length puts the key ~2 s in debt (it waits for it, unread); a small
    // chunked body sent right after waits for that debt before it is read.
    // Timed from the declared body's start: a loaded machine may take a while to deliver its headers.
    const started = performance.now();
    const declared = post(key, bodyOf(768 * KIB));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const chunked = await postChunked(key, bodyOf(KIB));
    expect(chunked.status).to.equal(200);
    expect(performance.now() - started).to.be.at.least(0.6 * 1900);
    expect((await declared).status).to.equal(200);
  });

  it('charges a compressed body the bytes it decodes to: the key’s next bodies wait for them, not other keys’', async () => {
    const [busy, other] = [await createTestKey(['graphql:read']), await createTestKey(['graphql:read'])];
    // 200 KiB of JSON in about 1 KiB of gzip, four times, then a small plain body: 544 KiB past the
    // burst at 256 KiB/s, ~2.1 s. Charged by their wire bytes only, all five took a few ms.
    const gzipped = gzipSync(bodyOf(200 * KIB));
    expect(gzipped.length).to.be.below(2 * KIB);
    const started = performance.now();
    for (let i = 0; i < 4; i++) {
      const answer = await post(busy, gzipped, { 'content-encoding': 'gzip' });
      expect(JSON.parse(answer.text)).to.deep.equal({ data: { __typename: 'Query' } });
    }
    const small = post(busy, '{"query":"{ __typename }"}');
    const others = await post(other, '{"query":"{ __typename }"}');
    expect((await small).status).to.equal(200);
    const took = performance.now() - started;
    expect(took, 'the decoded bytes were charged').to.be.at.least((0.6 * (4 * 200 * KIB - BURST) * 1000) / RATE);
    expect(others.status).to.equal(200);
    expect(others.ms, 'another key is not paced by this one').to.be.below(took / 2);
  });

  it('charges a body refused for inflating past the limit what it inflated to: the key’s next body waits or is refused', async () => {
    const key = await createTestKey(['graphql:read']);
    // 5 MiB of JSON in a few KiB of gzip: 413 once 4 MiB (the limit) are decoded, and those 4 MiB
    // are the key's debt: ~15 s at 256 KiB/s, so its next body (any size) is refused at once.
    const bomb = gzipSync(bodyOf(5 * 1024 * KIB), { level: 9 });
    expect(bomb.length).to.be.below(16 * KIB);
    expectProblem(await post(key, bomb, { 'content-encoding': 'gzip' }), 413);
    const next = await post(key, '{"query":"{ __typename }"}');
    expectProblem(next, 429);
    expect(Number(next.headers.get('retry-after'))).to.be.within(1, 10);
  });

  it('reads a key’s compressed bodies one at a time: each waits for the bytes those before it decoded to', async () => {
    const [busy, other] = [await createTestKey(['graphql:read']), await createTestKey(['graphql:read'])];
    // Six 200 KiB bodies in about 1 KiB of gzip each, sent at once: the last waits for the five
    // before it, (5 x 200 - 256) KiB at 256 KiB/s, ~2.9 s. Read side by side, all took a few ms.
    const gzipped = gzipSync(bodyOf(200 * KIB));
    const started = performance.now();
    const sent = Array.from({ length: 6 }, () => post(busy, gzipped, { 'content-encoding': 'gzip' }));
    const others = await post(other, '{"query":"{ __typename }"}');
    const answers = await Promise.all(sent);
    const took = performance.now() - started;
    for (const answer of answers) expect(JSON.parse(answer.text)).to.deep.equal({ data: { __typename: 'Query' } });
    expect(took, 'the decoded bytes were charged before the next body was read').to.be.at.least(
      (0.6 * (5 * 200 * KIB - BURST) * 1000) / RATE,
    );
    expect(others.status).to.equal(200);
    expect(others.ms, 'another key is not paced by this one').to.be.below(took / 2);
  });

  it('refuses a chunked gzip body whose turn and debt together would wait over 10 s', async () => {
    const key = await createTestKey(['graphql:read']);
    // Three bodies of 1.5 MiB in a few KiB of gzip, chunked, at once: one is read at once (5 s
    // of debt past the burst), the next waits those 5 s, and the last, its turn come after ~5 s,
    // would wait ~6 s more for the second's: refused. Read side by side, all three were answered 200.
    const bomb = gzipSync(bodyOf(1536 * KIB), { level: 9 });
    const answers = await Promise.all([0, 1, 2].map(() => postChunked(key, bomb, { 'content-encoding': 'gzip' })));
    expect(answers.map((a) => a.status).sort()).to.deep.equal([200, 200, 429]);
    expect(Number(answers.find((a) => a.status === 429)!.headers['retry-after'])).to.be.at.least(1);
  });

  it('lets a key’s next chunked body through at once when one before it left while the key was looked up', async () => {
    const key = await createTestKey(['graphql:read']);
    // The key's look-up held in the database (a fresh key is not cached yet) while its client sends
    // a chunked body's headers and leaves. Its turn, taken after it had gone, was never ended: every
    // later chunked or compressed body of the key waited 10 s and got 429.
    const locker = new pg.Client({ connectionString: testDb().url });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table api_key in access exclusive mode');
      const socket = await openSocket(api.url);
      socket.write(
        `POST /graphql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
          'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
      );
      await sleep(200);
      socket.destroy();
      await sleep(100);
      await locker.query('commit');
    } finally {
      await locker.end();
    }
    await sleep(200);
    const chunked = await postChunked(key, '{"query":"{ __typename }"}');
    expect(chunked.status, chunked.text).to.equal(200);
    expect(chunked.ms, 'it waited for no turn').to.be.below(MAX_WAIT_MS / 2);
    const gzipped = await post(key, gzipSync('{"query":"{ __typename }"}'), { 'content-encoding': 'gzip' });
    expect(gzipped.status, gzipped.text).to.equal(200);
  });

  it('paces a chunked gzip body by the bytes it is sent in', async () => {
    const key = await createTestKey(['graphql:read']);
    // Random padding hardly compresses: ~780 KiB of gzip, ~2 s past the burst at 256 KiB/s.
    const body = gzipSync(bodyOf(0).replace('""', JSON.stringify(randomBytes(576 * KIB).toString('base64'))));
    const chunked = await postChunked(key, body, { 'content-encoding': 'gzip' });
    expect(JSON.parse(chunked.text)).to.deep.equal({ data: { __typename: 'Query' } });
    expect(chunked.ms).to.be.at.least((0.6 * (body.length - BURST) * 1000) / RATE);
  });
});

describe('GraphQL body pacing: the largest body the settings allow', () => {
  it('takes a body of exactly the burst and 10 s of pace from a key that owes nothing', () => {
    // config.ts allows GRAPHQL_MAX_BODY_BYTES up to this; in floating point the wait came out a hair
    // over 10 s for some rates, and such bodies were refused every time.
    for (const bytesPerSecond of [1024, 5_000_000, 3 * 1024 * 1024 + 7, 4 * 1024 * 1024, 999_999]) {
      const burstBytes = 16 * 1024 * 1024;
      const pacing = createBytePace({ bytesPerSecond, burstBytes, now: () => 1234.5678 });
      const wait = pacing.reserve('k', burstBytes + (MAX_WAIT_MS / 1000) * bytesPerSecond);
      expect(wait, `at ${bytesPerSecond} B/s`).to.be.closeTo(MAX_WAIT_MS, 1e-3);
    }
  });
});

describe('GraphQL body pacing: the chunked debt', () => {
  it('pauses reading while the key is past its burst, and tells how long it owes', () => {
    let t = 0;
    const pacing = createBytePace({ bytesPerSecond: 1000, burstBytes: 1000, now: () => t });
    expect(pacing.charge('k', 500), 'within the burst').to.equal(0);
    expect(pacing.charge('k', 1000), '500 bytes past the burst').to.equal(500);
    expect(pacing.owedMs('k')).to.equal(500);
    expect(pacing.owedMs('other'), 'other keys owe nothing').to.equal(0);
    t = 500;
    expect(pacing.owedMs('k')).to.equal(0);
    // A chunked body of a key owing more than MAX_WAIT_MS is refused (paceBodies): owedMs says so.
    pacing.charge('k', MAX_WAIT_MS + 1);
    expect(pacing.owedMs('k')).to.be.above(MAX_WAIT_MS);
    expect(pacing.retryAfterMs('k', 0)).to.equal(1);
  });
});
