// The per-key pace of GraphQL request bodies (graphql/body-pacing.ts, issue 18 item 4): within the
// burst a body is read at once; beyond it the next body waits unread until its bytes are due; one
// that would wait over 10 s is refused at once (429 problem, Retry-After, connection closed); other
// keys are not held back; a chunked body is charged once read.
import { request } from 'node:http';
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { createTestKey, startTestApi } from '../support/api.ts';
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
    api = await startTestApi({ graphql: { bodyPace: { bytesPerSecond: RATE, burstBytes: BURST } } });
  });
  after(() => api.close());

  const post = async (key: string, body: string) => {
    const started = performance.now();
    const res = await fetch(`${api.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
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

  it('charges a chunked body (no Content-Length) once read: the next body waits for it', async () => {
    const key = await createTestKey(['graphql:read']);
    const chunked = await new Promise<number>((resolve, reject) => {
      const url = new URL(`${api.url}/graphql`);
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: '/graphql',
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        },
      );
      req.on('error', reject);
      const body = bodyOf(768 * KIB);
      for (let i = 0; i < body.length; i += 64 * KIB) req.write(body.slice(i, i + 64 * KIB));
      req.end();
    });
    expect(chunked).to.equal(200);
    // 768 KiB charged against a 256 KiB burst: a small body now waits about 2 s.
    const after = await post(key, bodyOf(KIB));
    expect(after.status).to.equal(200);
    expect(after.ms).to.be.at.least(1500);
  });
});
