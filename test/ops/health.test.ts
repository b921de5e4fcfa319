import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { getJson, startTestApi } from '../support/api.ts';
import { expectProblem } from '../support/problem.ts';
import { type ProxiedApi, startProxiedApi } from '../support/proxied-api.ts';
import { eventually } from '../support/webhooks.ts';
import { ensureQueueSchema, openEmptyDatabase } from './ops-support.ts';

describe('health probes', () => {
  before(() => ensureQueueSchema());

  describe('with the database up', () => {
    let api: Api;
    before(async () => {
      api = await startTestApi();
    });
    after(() => api.close());

    it('GET /healthz is 200 {status: ok} without a key', async () => {
      const res = await getJson(api, '/healthz', null);
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^application\/json/);
      expect(res.body).to.deep.equal({ status: 'ok' });
    });

    it('GET /readyz is 200 when the database and the pg-boss schema answer, without a key', async () => {
      // Its check has 1 s, a new connection included: on a loaded machine a first probe may be a 503
      // (Retry-After 5), which an orchestrator probes again; one seen in a full CI run. It must turn 200.
      const res = await eventually(
        async () => {
          const probe = await getJson(api, '/readyz', null);
          if (probe.status !== 200) expectProblem(probe, 503);
          return probe.status === 200 && probe;
        },
        10_000,
        '/readyz 200',
      );
      expect(res.body).to.deep.equal({ status: 'ok', checks: { database: 'ok', queue: 'ok' } });
    });

    it('GET /readyz answers 503 within its deadline when the queue schema is locked, instead of hanging', async () => {
      // e.g. a pg-boss migration holding its tables: the probe must answer, not wait for the lock.
      const locker = await testDb().pool.connect();
      try {
        await locker.query('begin');
        await locker.query('lock table pgboss.version in access exclusive mode');
        const started = Date.now();
        const res = await getJson(api, '/readyz', null);
        expectProblem(res, 503);
        expect(Date.now() - started).to.be.below(5000); // the 1 s readiness timeout, with room for a loaded machine
      } finally {
        await locker.query('rollback');
        locker.release();
      }
      expect((await getJson(api, '/readyz', null)).status).to.equal(200);
    });

    it('HEAD works on the probes; other methods are 405 with Allow', async () => {
      for (const path of ['/healthz', '/readyz']) {
        const head = await fetch(`${api.url}${path}`, { method: 'HEAD' });
        expect(head.status, path).to.equal(200);
        const post = await getJson(api, path, null, { method: 'POST' });
        expectProblem(post, 405);
        expect(post.headers.get('allow')).to.equal('GET, HEAD');
      }
    });
  });

  describe('with a database that has no pg-boss schema', () => {
    let empty: Awaited<ReturnType<typeof openEmptyDatabase>>;
    let api: Api;
    before(async () => {
      empty = await openEmptyDatabase();
      api = await startTestApi({ db: empty.db });
    });
    after(async () => {
      await api?.close();
      await empty?.drop();
    });

    it('GET /readyz is 503 naming the queue, while /healthz stays 200', async () => {
      const res = await getJson(api, '/readyz', null);
      const problem = expectProblem(res, 503);
      expect(problem.type).to.equal('/problems/service-unavailable');
      expect(problem.detail).to.match(/queue/);
      expect(res.headers.get('retry-after')).to.equal('5');
      expect((await getJson(api, '/healthz', null)).status).to.equal(200);
    });
  });

  describe('when the database becomes unreachable', () => {
    let proxied: ProxiedApi;
    before(async () => {
      proxied = await startProxiedApi();
    });
    after(() => proxied?.close());

    it('/readyz turns 503 with Retry-After quickly, /healthz stays 200, and /readyz recovers by itself', async () => {
      expect((await getJson(proxied.api, '/readyz', null)).status).to.equal(200);

      proxied.proxy.cut();
      const started = Date.now();
      const down = await getJson(proxied.api, '/readyz', null);
      const elapsed = Date.now() - started;
      const problem = expectProblem(down, 503);
      expect(problem.detail).to.match(/database/);
      expect(down.headers.get('retry-after')).to.equal('5');
      expect(elapsed, 'readiness must not hang').to.be.below(5000); // the 1 s readiness timeout, with room for a loaded machine
      expect((await getJson(proxied.api, '/healthz', null)).status).to.equal(200);

      proxied.proxy.restore();
      let status = 0;
      for (let i = 0; i < 20 && status !== 200; i++) {
        status = (await getJson(proxied.api, '/readyz', null)).status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(status).to.equal(200);
    });
  });
});
