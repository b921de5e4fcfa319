// CORS on /v1 (issue 18 item 17): off by default (no CORS header, a preflight stays 405); with
// CORS_ORIGINS, a preflight from a listed origin gets what a browser needs to send Authorization and
// If-None-Match, and answers to it expose ETag, RateLimit and Retry-After; other origins get no CORS
// header; never `*`, never credentials.
import { expect } from 'chai';
import { loadConfig } from '../../src/kernel/config.ts';
import type { Api } from '../../src/app/service.ts';
import { createTestKey, startTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';

const APP = 'https://app.example.com';
const preflight = (api: Api, path: string, origin: string) =>
  fetch(`${api.url}${path}`, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'GET',
      'access-control-request-headers': 'authorization, if-none-match',
    },
  });

describe('CORS on /v1', () => {
  let key: string;
  let recordPath: string;
  const apis: Api[] = [];
  const start = async (corsOrigins: string[] | null) => {
    const api = await startTestApi(corsOrigins ? { http: { corsOrigins } } : {});
    apis.push(api);
    return api;
  };
  before(async () => {
    key = await createTestKey(['catalog:read']);
    const api = await start(null);
    recordPath = `/v1/learning-opportunities/${(await createRecord(api.writes)).id}`;
  });
  after(async () => {
    for (const api of apis) await api.close();
  });

  it('is off by default: no CORS header, and a preflight is 405 as before', async () => {
    const api = apis[0]!;
    const pre = await preflight(api, '/v1/learning-opportunities', APP);
    expect(pre.status).to.equal(405);
    expect(pre.headers.get('access-control-allow-origin')).to.equal(null);
    const get = await fetch(`${api.url}${recordPath}`, { headers: { origin: APP, authorization: `Bearer ${key}` } });
    expect(get.status).to.equal(200);
    expect(get.headers.get('access-control-allow-origin')).to.equal(null);
  });

  it('answers a preflight from a listed origin with what a browser needs, and exposes the headers clients read', async () => {
    const api = await start([APP, 'http://localhost:5173']);
    for (const path of ['/v1/learning-opportunities', recordPath, '/v1/events']) {
      const pre = await preflight(api, path, APP);
      expect(pre.status, path).to.equal(204);
      expect(pre.headers.get('access-control-allow-origin')).to.equal(APP);
      expect(pre.headers.get('access-control-allow-methods')).to.match(/\bGET\b/);
      const allowed = pre.headers
        .get('access-control-allow-headers')!
        .toLowerCase()
        .split(/\s*,\s*/);
      expect(allowed).to.include.members(['authorization', 'if-none-match']);
      expect(pre.headers.get('access-control-allow-credentials')).to.equal(null);
      expect(pre.headers.get('vary')).to.match(/Origin/);
      expect(pre.headers.get('x-request-id'), 'a request id, as every answer').to.match(/^[0-9a-f-]{36}$/);
    }
    const traced = await fetch(`${api.url}/v1/events`, {
      method: 'OPTIONS',
      headers: { origin: APP, 'access-control-request-method': 'GET', 'x-request-id': 'preflight-1' },
    });
    expect([traced.status, traced.headers.get('x-request-id')]).to.deep.equal([204, 'preflight-1']);
    const get = await fetch(`${api.url}${recordPath}`, { headers: { origin: APP, authorization: `Bearer ${key}` } });
    expect(get.status).to.equal(200);
    expect(get.headers.get('access-control-allow-origin')).to.equal(APP);
    expect(get.headers.get('access-control-allow-credentials')).to.equal(null);
    const exposed = get.headers
      .get('access-control-expose-headers')!
      .toLowerCase()
      .split(/\s*,\s*/);
    expect(exposed).to.include.members(['etag', 'ratelimit', 'ratelimit-policy', 'retry-after']);
    expect(get.headers.get('vary')).to.match(/Origin/);
    // A refusal is readable by the page too (its 401 says what is wrong).
    const refused = await fetch(`${api.url}${recordPath}`, { headers: { origin: 'http://localhost:5173' } });
    expect(refused.status).to.equal(401);
    expect(refused.headers.get('access-control-allow-origin')).to.equal('http://localhost:5173');
  });

  it('gives an origin not listed no CORS header (its browser refuses the answer)', async () => {
    const api = await start([APP]);
    for (const origin of [
      'https://evil.example.com',
      'https://app.example.com.evil.com',
      'http://app.example.com',
      'null',
    ]) {
      const pre = await preflight(api, '/v1/learning-opportunities', origin);
      expect(pre.status, origin).to.equal(405);
      expect(pre.headers.get('access-control-allow-origin'), origin).to.equal(null);
      const get = await fetch(`${api.url}${recordPath}`, { headers: { origin, authorization: `Bearer ${key}` } });
      expect(get.headers.get('access-control-allow-origin'), origin).to.equal(null);
    }
  });

  it('takes exact origins only in CORS_ORIGINS', () => {
    expect(loadConfig({ CORS_ORIGINS: 'https://a.example.com, http://localhost:5173' }).http.corsOrigins).to.deep.equal(
      ['https://a.example.com', 'http://localhost:5173'],
    );
    expect(loadConfig({}).http.corsOrigins).to.deep.equal([]);
    for (const bad of [
      '*',
      'https://a.example.com/',
      'https://a.example.com/app',
      'a.example.com',
      'ftp://a.example.com',
    ]) {
      expect(() => loadConfig({ CORS_ORIGINS: bad }), bad).to.throw(/CORS_ORIGINS/);
    }
    // The bad one of several is named by its value, not by its place in the list.
    expect(() => loadConfig({ CORS_ORIGINS: 'https://a.example.com,ftp://b.example.com' })).to.throw(
      /^Invalid configuration:\n {2}- CORS_ORIGINS: ftp:\/\/b.example.com is not an exact origin such as https:\/\/app.example.com/,
    );
  });
});
