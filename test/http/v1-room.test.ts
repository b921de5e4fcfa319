// One /v1 room (issue 19 item 4): every /v1 endpoint is served by the dispatcher of src/http/v1/ on
// node:http, through its one route table and its one admission step; the express app holds none of
// them, and the rest of src/ enters the room only by its dispatcher (and the 100-continue edge by
// its route table).
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { expect } from 'chai';
import { createApp } from '../../src/app/express-app.ts';
import { createKeyCache } from '../../src/auth/key-cache.ts';
import { V1_ROUTES } from '../../src/http/v1/routes.ts';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, silentLogger, startTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { expectProblem } from '../support/problem.ts';

const SRC = resolve(import.meta.dirname, '../../src');

describe('the /v1 room', () => {
  let api: Api;
  let id: string;
  before(async () => {
    api = await startTestApi();
    id = (await createRecord(api.writes, { status: 'PUBLISHED' })).id;
  });
  after(() => api.close());

  const pathOf = (route: string) => route.replace(':id', id);

  it('leaves express no /v1 endpoint: the express app alone answers each of them 404', async () => {
    const db = testDb();
    const app = createApp({
      pool: db.pool,
      keys: createKeyCache({ primary: db.pool, fallback: db.pool }, { maxAgeMs: 0, maxEntries: 1 }),
      limiter: null,
      logger: silentLogger,
      graphql: (_req, res) => void res.end(),
      graphqlMaxBodyBytes: 1024,
      graphqlMaxTokens: 100,
      graphqlBodyPace: { bytesPerSecond: 1024 * 1024, burstBytes: 1024 * 1024 },
      readinessTimeoutMs: 1000,
    });
    const server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const key = await createTestKey(['catalog:read']);
      for (const route of Object.keys(V1_ROUTES)) {
        const res = await fetch(`http://127.0.0.1:${port}${pathOf(route)}`, {
          headers: { authorization: `Bearer ${key}` },
        });
        expectProblem({ status: res.status, headers: res.headers, text: await res.text() }, 404);
      }
    } finally {
      server.close();
    }
  });

  it('serves each endpoint of its route table with its methods and its admission: 405 with Allow, 401 without a key where it takes one', async () => {
    for (const [route, { methods, scope }] of Object.entries(V1_ROUTES)) {
      const path = pathOf(route);
      const other = await fetch(`${api.url}${path}`, { method: 'DELETE' });
      expect(other.status, `DELETE ${path}`).to.equal(405);
      expect(other.headers.get('allow'), path).to.equal(methods.join(', '));
      expect(other.headers.get('x-request-id'), path).to.match(/^[0-9a-f-]{36}$/);
      const anonymous = await fetch(`${api.url}${path}`);
      expect(anonymous.status, `GET ${path} without a key`).to.equal(scope === null ? 200 : 401);
      await anonymous.arrayBuffer();
    }
  });

  it('is entered only by its dispatcher (service.ts) and its route table (the 100-continue edge); only the dispatcher admits', async () => {
    const entries: string[] = [];
    const admitting: string[] = [];
    for (const file of (await readdir(SRC, { recursive: true })).filter((f) => f.endsWith('.ts'))) {
      const code = await readFile(join(SRC, file), 'utf8');
      const inRoom = file.startsWith(join('http', 'v1'));
      for (const [, target] of code.matchAll(/from '([^']*\/v1\/[^']+)'/g))
        if (!inRoom) entries.push(`${file} -> ${relative(SRC, resolve(join(SRC, file), '..', target!))}`);
      if (/(?<!function )\badmit\(\s*deps\b/.test(code)) admitting.push(file);
    }
    expect(entries.sort()).to.deep.equal([
      'app/service.ts -> http/v1/dispatcher.ts',
      'http/expect-continue.ts -> http/v1/routes.ts',
    ]);
    expect(admitting).to.deep.equal([join('http', 'v1', 'dispatcher.ts')]);
  });
});
