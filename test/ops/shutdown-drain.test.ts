// A SIGTERM in the middle of a request (a rollout, `docker compose up -d`): the request is answered if it
// finishes within SHUTDOWN_HTTP_GRACE_MS, and only then is its connection closed. Found from outside: a
// long bulk mutation was committed but its client got a reset after Apollo's own 10 s default.
import { request } from 'node:http';
import { expect } from 'chai';
import { createTestKey } from '../support/api.ts';
import { startRoleProcess } from '../support/role-process.ts';

const QUERY = JSON.stringify({ query: '{ __typename }' });

/** POSTs QUERY to /graphql, its body in two halves `gapMs` apart; the status, or the error that ended it. */
function slowGraphqlRequest(url: string, key: string, gapMs: number): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request(
      `${url}/graphql`,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(QUERY),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    const half = Math.floor(QUERY.length / 2);
    req.write(QUERY.slice(0, half));
    setTimeout(() => req.end(QUERY.slice(half)), gapMs);
  });
}

describe('shutdown: requests in flight and SHUTDOWN_HTTP_GRACE_MS', function () {
  this.timeout(60_000);

  for (const { graceMs, expected } of [
    { graceMs: 6000, expected: 200 },
    { graceMs: 500, expected: 'ECONNRESET' },
  ]) {
    it(`a request still arriving 2.5 s after SIGTERM is ${expected === 200 ? 'answered' : 'cut'} with a grace of ${graceMs} ms; the process exits 0`, async () => {
      const key = await createTestKey();
      const api = await startRoleProcess('api', { SHUTDOWN_HTTP_GRACE_MS: String(graceMs) });
      const answer = slowGraphqlRequest(api.url!, key, 3000);
      await new Promise((done) => setTimeout(done, 500));
      const exit = api.stop();
      expect(await answer, api.output()).to.equal(expected);
      expect(await exit, api.output()).to.equal(0);
    });
  }
});
