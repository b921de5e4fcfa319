import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { PgBoss } from 'pg-boss';
import type { Api } from '../../src/app/service.ts';
import { DEAD_LETTER_QUEUE, DELIVERY_QUEUE } from '../../src/webhooks/queue/boss.ts';
import { getJson, startTestApi, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { eventually } from '../support/webhooks.ts';
import { testDb } from '../hooks.ts';
import { type ProxiedApi, startProxiedApi } from '../support/proxied-api.ts';
import { openEmptyDatabase, startTestBoss } from './ops-support.ts';

const HTTP_COUNT = 'lods_http_request_duration_seconds_count';

async function scrape(baseUrl: string): Promise<string> {
  const res = await fetch(`${baseUrl}/metrics`);
  expect(res.status).to.equal(200);
  expect(res.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
  return await res.text();
}

/** The value of one sample, matched by name and exact label set; undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? '')
      .split(/,(?=\w+=")/)
      .filter(Boolean)
      .sort()
      .join(',');
    if (have === wanted) return Number(m[3]);
  }
  return undefined;
}

describe('GET /metrics', () => {
  describe('HTTP metrics', () => {
    const served = useTestApi(['catalog:read']);

    it('counts requests by method, route pattern and status, never by raw path', async () => {
      const record = await createRecord(served.api.writes);
      const before = await scrape(served.api.url);
      const one = { method: 'GET', route: '/v1/learning-opportunities/:id' };

      expect((await getJson(served.api, `/v1/learning-opportunities/${record.id}`, served.key)).status).to.equal(200);
      expect((await getJson(served.api, `/v1/learning-opportunities/${record.id}`, served.key)).status).to.equal(200);
      expect((await getJson(served.api, `/v1/learning-opportunities/${randomUUID()}`, served.key)).status).to.equal(
        404,
      );
      expect((await getJson(served.api, `/v1/learning-opportunities/${record.id}`, null)).status).to.equal(401);
      expect((await getJson(served.api, '/v1/learning-opportunities?limit=0', served.key)).status).to.equal(400);
      expect((await getJson(served.api, `/no/such/path/${randomUUID()}`, served.key)).status).to.equal(404);

      const after = await scrape(served.api.url);
      const delta = (labels: Record<string, string>) =>
        (sample(after, HTTP_COUNT, labels) ?? 0) - (sample(before, HTTP_COUNT, labels) ?? 0);
      expect(delta({ ...one, status: '200' })).to.equal(2);
      expect(delta({ ...one, status: '404' })).to.equal(1);
      expect(delta({ ...one, status: '401' })).to.equal(1);
      expect(delta({ method: 'GET', route: '/v1/learning-opportunities', status: '400' })).to.equal(1);
      expect(delta({ method: 'GET', route: 'unmatched', status: '404' })).to.equal(1);
      // Bounded label values: no id and no unknown path ever becomes a label.
      expect(after).not.to.match(/route="[^"]*[0-9a-f]{8}-[0-9a-f]{4}-/);
      expect(after).not.to.contain('/no/such/path');
      expect(after).to.match(/lods_http_request_duration_seconds_bucket\{[^}]*le="0.005"/);
    });

    it('needs no key, exposes the process metrics and refuses other methods with 405', async () => {
      const text = await scrape(served.api.url);
      expect(text).to.contain('lods_process_cpu_user_seconds_total');
      expect(text).to.match(/^# TYPE lods_webhook_queue_depth gauge$/m);
      expect(text).to.match(/^# TYPE lods_webhook_dead_letters gauge$/m);
      const post = await fetch(`${served.api.url}/metrics`, { method: 'POST' });
      expect(post.status).to.equal(405);
      expect(post.headers.get('allow')).to.equal('GET, HEAD');
    });
  });

  describe('webhook queue gauges', () => {
    let boss: PgBoss;
    let api: Api;
    const jobs: { queue: string; id: string }[] = [];
    before(async () => {
      boss = await startTestBoss();
      api = await startTestApi();
    });
    after(async () => {
      for (const { queue, id } of jobs) await boss.deleteJob(queue, id);
      await api?.close();
      await boss?.stop({ graceful: false, close: true });
    });

    it('report the deliveries waiting in the delivery queue and the dead letters, read at scrape time', async () => {
      const before = await scrape(api.url);
      const depth0 = sample(before, 'lods_webhook_queue_depth')!;
      const dead0 = sample(before, 'lods_webhook_dead_letters')!;
      expect(depth0).to.be.a('number').that.is.at.least(0);

      // Jobs as the worker leaves them: a delivery waiting for its next attempt, and a dead letter.
      const receiverId = randomUUID();
      for (let attempt = 1; attempt <= 2; attempt++) {
        const id = await boss.send(
          DELIVERY_QUEUE,
          { eventId: randomUUID(), receiverId, attempt },
          { startAfter: 3600 },
        );
        jobs.push({ queue: DELIVERY_QUEUE, id: id! });
      }
      const deadId = await boss.send(DEAD_LETTER_QUEUE, { eventId: randomUUID(), receiverId, attempts: 8 });
      jobs.push({ queue: DEAD_LETTER_QUEUE, id: deadId! });

      const after = await scrape(api.url);
      expect(sample(after, 'lods_webhook_queue_depth')).to.equal(depth0 + 2);
      expect(sample(after, 'lods_webhook_dead_letters')).to.equal(dead0 + 1);

      await boss.deleteJob(DELIVERY_QUEUE, jobs[0]!.id);
      expect(sample(await scrape(api.url), 'lods_webhook_queue_depth')).to.equal(depth0 + 1);
    });
  });

  describe('search fold gauge', () => {
    const served = useTestApi(['catalog:read']);

    it('reports the records waiting for their fold into the search bitmaps, and none once folded', async () => {
      // The fold's try-lock held, as by another process folding: the API's folder skips its ticks.
      const holder = await testDb().pool.connect();
      try {
        await holder.query('begin');
        await holder.query('select pg_advisory_xact_lock(20261223, 1)');
        await createRecord(served.api.writes);
        await createRecord(served.api.writes);
        const waiting = Number(
          (await testDb().pool.query<{ n: string }>('select count(*) as n from search_dirty')).rows[0]!.n,
        );
        expect(waiting, 'marked by the writes').to.be.at.least(2);
        expect(sample(await scrape(served.api.url), 'lods_search_marked_records')).to.equal(waiting);
      } finally {
        await holder.query('rollback');
        holder.release();
      }
      await eventually(
        async () => sample(await scrape(served.api.url), 'lods_search_marked_records') === 0,
        10_000,
        'the folder folded them',
      );
    });
  });

  describe('webhook queue gauges without pg-boss or without the database', () => {
    let empty: Awaited<ReturnType<typeof openEmptyDatabase>>;
    let proxied: ProxiedApi;
    let emptyApi: Api;
    before(async () => {
      empty = await openEmptyDatabase();
      emptyApi = await startTestApi({ db: empty.db });
      proxied = await startProxiedApi();
    });
    after(async () => {
      await emptyApi?.close();
      await proxied?.close();
      await empty?.drop();
    });

    it('are 0 while pg-boss has not installed its schema', async () => {
      const text = await scrape(emptyApi.url);
      expect(sample(text, 'lods_webhook_queue_depth')).to.equal(0);
      expect(sample(text, 'lods_webhook_dead_letters')).to.equal(0);
    });

    it('are NaN (unknown) while the database is unreachable, and the scrape still succeeds quickly', async () => {
      proxied.proxy.cut();
      try {
        const started = Date.now();
        const text = await scrape(proxied.api.url);
        expect(Date.now() - started).to.be.below(5000); // the 1 s gauge timeout, with room for a loaded machine
        expect(Number.isNaN(sample(text, 'lods_webhook_queue_depth')), 'depth is NaN').to.equal(true);
        expect(Number.isNaN(sample(text, 'lods_webhook_dead_letters')), 'dead letters NaN').to.equal(true);
        expect(Number.isNaN(sample(text, 'lods_search_marked_records')), 'search backlog NaN').to.equal(true);
        expect(text).to.contain('lods_process_cpu_user_seconds_total');
      } finally {
        proxied.proxy.restore();
      }
    });
  });
});
