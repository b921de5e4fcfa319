// POST /graphql takes at most GRAPHQL_MAX_BODY_BYTES (1 MiB here; the default is 4 MiB): a larger body is a 413 problem and writes nothing; a body
// just under the limit is served.
import { connect } from 'node:net';
import { expect } from 'chai';
import { testDb } from '../hooks.ts';
import { useTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { UPSERT } from '../support/graphql-documents.ts';
import { expectInvalidParams, expectProblem } from '../support/problem.ts';

const LIMIT = 1024 * 1024;

/** An upsert request padded (with an unused variable) to exactly `bytes` bytes. */
function upsertBody(id: string, bytes: number): string {
  const base = JSON.stringify({
    query: UPSERT,
    variables: { input: buildLearningOpportunityInput({ id }), padding: '' },
  });
  const body = base.replace('"padding":""', `"padding":"${'x'.repeat(bytes - Buffer.byteLength(base))}"`);
  expect(Buffer.byteLength(body)).to.equal(bytes);
  return body;
}

async function exists(id: string): Promise<boolean> {
  const { rows } = await testDb().pool.query('select 1 from learning_opportunity where id = $1', [id]);
  return rows.length === 1;
}

describe('POST /graphql body limit', () => {
  const served = useTestApi(['catalog:write'], { http: { graphqlMaxBodyBytes: LIMIT } });
  const post = async (body: string, contentType = 'application/json') => {
    const res = await fetch(`${served.api.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': contentType, authorization: `Bearer ${served.key}` },
      body,
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };

  it('rejects a body one byte over 1 MiB with a 413 problem and writes nothing', async () => {
    const id = crypto.randomUUID();
    const res = await post(upsertBody(id, LIMIT + 1));
    const problem = expectProblem(res, 413);
    expect(problem.type).to.equal('/problems/payload-too-large');
    expect(await exists(id)).to.equal(false);
  });

  it('rejects a much larger body the same way', async () => {
    const id = crypto.randomUUID();
    expectProblem(await post(upsertBody(id, 3 * LIMIT)), 413);
    expect(await exists(id)).to.equal(false);
  });

  it('answers a declared over-limit length with the 413 at once, before the body is sent', async () => {
    const { host, port } = new URL(served.api.url);
    const socket = connect(Number(port), host.replace(/:\d+$/, ''));
    const head = new Promise<string>((resolve, reject) => {
      socket.once('data', (chunk) => resolve(chunk.toString('latin1')));
      socket.once('error', reject);
    });
    // Headers only: a client about to upload 20 MB learns the answer without sending a byte of it.
    socket.write(
      `POST /graphql HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${served.key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${20 * LIMIT}\r\n\r\n`,
    );
    const timeout = new Promise<string>((resolve) => setTimeout(() => resolve('no answer within 10 s'), 10_000));
    try {
      expect(await Promise.race([head, timeout])).to.match(/^HTTP\/1\.1 413 /);
    } finally {
      socket.destroy();
    }
  });

  it('rejects an over-limit body sent chunked (no Content-Length) the same way', async () => {
    const id = crypto.randomUUID();
    const bytes = new TextEncoder().encode(upsertBody(id, LIMIT + 64 * 1024));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 64 * 1024) controller.enqueue(bytes.subarray(i, i + 64 * 1024));
        controller.close();
      },
    });
    const res = await fetch(`${served.api.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${served.key}` },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expectProblem({ status: res.status, headers: res.headers, text: await res.text() }, 413);
    expect(await exists(id)).to.equal(false);
  });

  it('serves a body of exactly 1 MiB', async () => {
    const id = crypto.randomUUID();
    const res = await post(upsertBody(id, LIMIT));
    expect(res.status, res.text).to.equal(200);
    expect(JSON.parse(res.text).data.upsertLearningOpportunity.id).to.equal(id);
    expect(await exists(id)).to.equal(true);
  });

  it('answers a body that is not JSON with a 400 problem', async () => {
    expectInvalidParams(await post('{"query": '), ['body']);
  });
});
