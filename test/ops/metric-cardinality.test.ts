// Fuzzed requests (invented paths, methods, case and slash variants) add no metric series: the
// duration histogram is labelled by route pattern (or 'unmatched'), by a fixed set of methods (or
// 'other') and by status, so a client cannot grow the process's memory through /metrics.
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { expect } from 'chai';
import { httpRequestDuration } from '../../src/kernel/metrics.ts';
import type { Api } from '../../src/app/service.ts';
import { startTestApi } from '../support/api.ts';

function send(api: Api, method: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${api.url}${path}`, { method, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    req.end(method === 'GET' || method === 'HEAD' ? undefined : '{}');
  });
}

// Never the word as it is: all lower case would be the real route (a known series), not an unknown path.
function randomCase(s: string): string {
  for (;;) {
    const cased = [...s].map((c) => (Math.random() < 0.5 ? c.toUpperCase() : c.toLowerCase())).join('');
    if (cased !== s.toLowerCase()) return cased;
  }
}

/** One round of each kind of fuzzed request, with fresh random paths and the given invented methods. */
async function fuzz(api: Api, methods: string[]): Promise<void> {
  for (const method of methods) {
    const noise = randomBytes(6).toString('hex');
    const paths = [
      `/${noise}`,
      `/v1/${noise}/${noise}`,
      `/v1/learning-opportunities/${noise}`,
      `/v1/learning-opportunities/${noise}/`,
      `/problems/${noise}`,
      `/${randomCase('metrics')}${noise.length % 2 ? '/' : ''}`,
      `/${randomCase('graphql')}x`,
      '/healthz',
    ];
    for (const path of paths) {
      await send(api, method, path);
      await send(api, 'GET', path);
      await send(api, 'POST', path);
    }
  }
}

async function series(): Promise<string[]> {
  const { values } = await httpRequestDuration.get();
  return [...new Set(values.map((v) => JSON.stringify([v.labels.method, v.labels.route, v.labels.status])))].sort();
}

describe('metric series under fuzzed requests', () => {
  let api: Api;
  before(async () => {
    api = await startTestApi();
  });
  after(() => api.close());

  it('labels invented methods as "other" and unknown paths as "unmatched": a second fuzz round adds no series', async () => {
    await fuzz(api, ['PROPFIND', 'MKCOL', 'PURGE', 'LOCK']);
    const afterFirst = await series();
    await fuzz(api, ['REPORT', 'SEARCH', 'UNLOCK', 'MOVE', 'COPY', 'LINK']);
    const afterSecond = await series();
    expect(afterSecond).to.deep.equal(afterFirst);
    const methods = new Set(afterSecond.map((s) => (JSON.parse(s) as string[])[0]));
    expect([...methods].sort()).to.include.members(['GET', 'POST', 'other']);
    for (const method of methods)
      expect(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'other']).to.include(method);
    for (const s of afterSecond) expect(s, 'no raw path in a label').not.to.match(/[0-9a-f]{12}|metrics\/|graphqlx/i);
  });
});
