// Bearer authentication of /v1: 401 with a challenge for every kind of bad credential, 403 for a
// key without catalog:read, and revocation that takes effect on the very next request.
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { expect } from 'chai';
import { createApiKey, revokeApiKey } from '../../src/auth/api-keys.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson, refusedWithin, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';

describe('REST authentication and scopes', () => {
  const served = useTestApi(['catalog:read']);
  let one: string;
  const paths = () => ['/v1/learning-opportunities', one];

  before(async () => {
    one = `/v1/learning-opportunities/${(await createRecord(served.api.writes)).id}`;
  });

  const unknownKey = `lods_${randomBytes(32).toString('base64url')}`;
  const badHeaders: [string, string | null][] = [
    ['a missing header', null],
    ['an empty header', ''],
    ['the scheme alone', 'Bearer'],
    ['another scheme', 'Basic dXNlcjpwYXNz'],
    ['two tokens', 'Bearer abc def'],
    ['a token that is not a key', 'Bearer not-a-key'],
    ['an unknown key', `Bearer ${unknownKey}`],
  ];
  for (const [what, header] of badHeaders) {
    it(`is 401 with WWW-Authenticate: Bearer for ${what}`, async () => {
      for (const path of paths()) {
        const res = await getJson(
          served.api,
          path,
          null,
          header === null ? {} : { headers: { authorization: header } },
        );
        const problem = expectProblem(res, 401);
        expect(problem.type).to.equal('/problems/unauthenticated');
        expect(res.headers.get('www-authenticate')).to.match(/^Bearer\b/);
        expect(res.text).not.to.include(unknownKey);
      }
    });
  }

  it('accepts the scheme in any case, and more than one space after it', async () => {
    for (const header of [`bearer ${served.key}`, `Bearer   ${served.key}`]) {
      const res = await getJson(served.api, one, null, { headers: { authorization: header } });
      expect(res.status, header.replace(served.key, '<key>')).to.equal(200);
    }
  });

  it('is 401 invalid_request for two Authorization headers, whichever of them is valid', async () => {
    /** Status line and the rest of the answer to a GET written byte for byte (fetch would merge the two headers into one). */
    const rawGet = (path: string, authorizations: string[]) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const { hostname, port } = new URL(served.api.url);
        const socket = connect(Number(port), hostname);
        let text = '';
        socket.setEncoding('utf8').on('data', (c: string) => (text += c));
        socket.on('end', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), text }));
        socket.on('error', reject);
        socket.end(
          `GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\n${authorizations.map((a) => `Authorization: ${a}\r\n`).join('')}Connection: close\r\n\r\n`,
        );
      });
    for (const path of [...paths(), '/v1/events/head']) {
      for (const pair of [
        [`Bearer ${served.key}`, `Bearer ${unknownKey}`],
        [`Bearer ${unknownKey}`, `Bearer ${served.key}`],
        [`Bearer ${served.key}`, `Bearer ${served.key}`],
      ]) {
        const res = await rawGet(path, pair);
        expect(res.status, path).to.equal(401);
        expect(res.text).to.match(/\r\nwww-authenticate: Bearer\b.*invalid_request/i);
        expect(res.text).to.include('exactly one Authorization header');
      }
    }
  });

  it('is 403 for a valid key without catalog:read, with the needed scope in the challenge', async () => {
    const other = await createTestKey(['graphql:read', 'catalog:write']);
    for (const path of paths()) {
      const res = await getJson(served.api, path, other);
      const problem = expectProblem(res, 403);
      expect(problem.type).to.equal('/problems/forbidden');
      expect(res.headers.get('www-authenticate')).to.match(/^Bearer\b.*insufficient_scope/);
      expect(problem.detail).to.include('catalog:read');
    }
  });

  it('checks the key before the input (no 400 or 404 for an anonymous caller)', async () => {
    expectProblem(await getJson(served.api, '/v1/learning-opportunities?limit=0', null), 401);
    expectProblem(await getJson(served.api, '/v1/learning-opportunities/not-a-uuid', null), 401);
  });

  it('stops a revoked key within milliseconds, on every path', async () => {
    const created = await createApiKey(testDb().orm.em.fork(), { name: 'soon revoked', scopes: ['catalog:read'] });
    expect((await getJson(served.api, one, created.key)).status).to.equal(200);
    await revokeApiKey(testDb().orm.em.fork(), created.id);
    await refusedWithin(() => getJson(served.api, one, created.key));
    for (const path of paths()) {
      const res = expectProblem(await getJson(served.api, path, created.key), 401);
      expect(res.type).to.equal('/problems/unauthenticated');
    }
    // Revoking one key leaves the others working.
    expect((await getJson(served.api, one, served.key)).status).to.equal(200);
  });
});
