// The query class's admission and deadlines, made deterministic: a transaction of the test holds
// list_entry (which every filtered list reads) locked, so each filtered read blocks in PostgreSQL
// for as long as the test wants, holding its slot. The record and the plain list do not read
// list_entry: they must answer meanwhile.
import { expect } from 'chai';
import type { PoolClient } from 'pg';
import type { Api } from '../../src/app/service.ts';
import { createTestKey, getJson, graphql, startTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { openSocket } from '../support/raw-http.ts';
import { testDb } from '../hooks.ts';

const READ_TIMEOUT_MS = 3000;
const QUEUE_WAIT_MS = 300;
const FILTERED = '/v1/learning-opportunities?format=ONLINE';

describe('query class: admission per key and process, deadlines that hold in PostgreSQL', function () {
  this.timeout(30_000);
  let api: Api;
  let locker: PoolClient | null = null;
  let recordId: string;

  before(async () => {
    api = await startTestApi({
      readTimeoutMs: READ_TIMEOUT_MS,
      query: { perKey: 1, total: 2, queueWaitMs: QUEUE_WAIT_MS },
    });
    recordId = (await createRecord(api.writes)).id;
  });
  after(async () => {
    await unlock();
    await api.close();
  });

  async function lock(): Promise<void> {
    locker = await testDb().pool.connect();
    await locker.query('begin');
    await locker.query('lock table list_entry in access exclusive mode');
  }
  async function unlock(): Promise<void> {
    if (!locker) return;
    await locker.query('rollback');
    locker.release();
    locker = null;
  }
  /** Query-class statements running in PostgreSQL now (the query pool's connections). */
  async function running(): Promise<number> {
    const { rows } = await testDb().pool.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity
        where datname = current_database() and state = 'active' and application_name = 'lods-query'`,
    );
    return rows[0]!.n;
  }
  /** A counter of /metrics, by its name and labels as printed. */
  async function metric(series: string): Promise<number> {
    const text = await (await fetch(`${api.url}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return Number(line?.split(' ')[1] ?? 0);
  }
  async function until(check: () => Promise<boolean>, withinMs: number): Promise<void> {
    const deadline = Date.now() + withinMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it("refuses a key's read beyond its slots with 429 naming the limit, admits another key, never holds up records and plain lists", async () => {
    const [a, b] = [await createTestKey(['catalog:read', 'graphql:read']), await createTestKey(['catalog:read'])];
    await lock();
    try {
      const first = getJson(api, FILTERED, a); // takes a's one slot, blocked on the lock
      await until(async () => (await running()) === 1, 2000);
      const started = performance.now();
      const refused = await getJson(api, `${FILTERED}&q=online`, a);
      const waited = performance.now() - started;
      expect(refused.status).to.equal(429);
      expect(refused.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect(refused.headers.get('retry-after')).to.equal('1');
      expect((refused.body as { detail: string }).detail).to.contain('QUERY_MAX_CONCURRENT_PER_KEY');
      expect(waited).to.be.at.least(QUEUE_WAIT_MS - 20);
      // The same key through GraphQL: the same slots, a stable code, and REST's status and Retry-After,
      // after one wait in line, counted once (it waited and was counted twice: compiled-execution.ts).
      const refusedBefore = await metric('lods_query_refused_total{limit="key"}');
      const graphqlStarted = performance.now();
      const viaGraphql = await graphql(
        api,
        a,
        '{ learningOpportunities(filter: { format: [ONLINE] }) { pagination { totalCount } } }',
      );
      expect(performance.now() - graphqlStarted).to.be.at.least(QUEUE_WAIT_MS - 20);
      expect(await metric('lods_query_refused_total{limit="key"}')).to.equal(refusedBefore + 1);
      expect(viaGraphql.status).to.equal(429);
      expect(viaGraphql.headers.get('retry-after')).to.equal('1');
      expect(viaGraphql.body.errors).to.have.length(1);
      expect(viaGraphql.body.errors?.[0]?.extensions?.code).to.equal('RATE_LIMITED');
      expect(viaGraphql.body.errors?.[0]?.message).to.contain('QUERY_MAX_CONCURRENT_PER_KEY');
      // Another key has slots of its own (the process allows two).
      const second = getJson(api, FILTERED, b);
      await until(async () => (await running()) === 2, 2000);
      // The process is full: a third key waits, then 429 naming the process's limit.
      const c = await createTestKey(['catalog:read']);
      const full = await getJson(api, FILTERED, c);
      expect(full.status).to.equal(429);
      expect((full.body as { detail: string }).detail).to.contain('QUERY_MAX_CONCURRENT)');
      // Meanwhile the record and the plain list answer, and not after a queue wait: the query class
      // is full and locked, so had they queued behind it they would wait for the lock (the 3 s
      // deadline's 503) or be refused (429 after QUEUE_WAIT_MS).
      for (const path of [`/v1/learning-opportunities/${recordId}`, '/v1/learning-opportunities?limit=5']) {
        const t = performance.now();
        expect((await getJson(api, path, a)).status).to.equal(200);
        expect(performance.now() - t).to.be.below(READ_TIMEOUT_MS - 1000);
      }
      await unlock();
      expect((await first).status).to.equal(200);
      expect((await second).status).to.equal(200);
      const metrics = await (await fetch(`${api.url}/metrics`)).text();
      expect(metrics).to.match(/lods_query_refused_total\{limit="key"\} [1-9]/);
      expect(metrics).to.match(/lods_query_refused_total\{limit="process"\} [1-9]/);
    } finally {
      await unlock();
    }
  });

  it('cancels the statement in PostgreSQL at the deadline (503), not only the wait for it', async () => {
    const key = await createTestKey(['catalog:read']);
    await lock();
    try {
      const started = performance.now();
      const res = await getJson(api, FILTERED, key);
      const took = performance.now() - started;
      expect(res.status).to.equal(503);
      expect(res.headers.get('retry-after')).to.equal('1');
      expect(took).to.be.within(READ_TIMEOUT_MS - 50, READ_TIMEOUT_MS + 3000);
      // Still locked: a statement that merely lost its caller would still be waiting on the lock.
      await until(async () => (await running()) === 0, 2000);
      // GraphQL answers the same deadline as REST does: 503, Retry-After 1, and says what happened
      // (it said the database was unreachable, with Retry-After 5). Once: the statement is not run
      // a second time after its cancel (it was, by graphql-js after the compiled query's refusal:
      // 503 after twice the deadline, two cancels counted).
      const cancelledBefore = await metric('lods_db_reads_cancelled_total{reason="deadline"}');
      const graphqlStarted = performance.now();
      const viaGraphql = await graphql(
        api,
        await createTestKey(['graphql:read']),
        '{ learningOpportunities(filter: { format: [ONLINE] }) { pagination { totalCount } } }',
      );
      expect(performance.now() - graphqlStarted).to.be.within(READ_TIMEOUT_MS - 50, 2 * READ_TIMEOUT_MS - 500);
      // At most once (the server's own statement_timeout, equal to the deadline, may stop it first: not counted).
      expect(await metric('lods_db_reads_cancelled_total{reason="deadline"}')).to.be.at.most(cancelledBefore + 1);
      expect(viaGraphql.status).to.equal(503);
      expect(viaGraphql.headers.get('retry-after')).to.equal('1');
      expect(viaGraphql.body.errors?.[0]?.extensions?.code).to.equal('SERVICE_UNAVAILABLE');
      expect(viaGraphql.body.errors?.[0]?.message).to.contain(`did not finish within ${READ_TIMEOUT_MS} ms`);
      await until(async () => (await running()) === 0, 2000);
    } finally {
      await unlock();
    }
  });

  it('gives the reads of one GraphQL request one deadline together, not one each', async () => {
    // Seen from outside: ten aliases of a search, each cancelled at its own deadline, held a slot
    // for ten deadlines (5.5 s at DB_READ_TIMEOUT_MS=500) before the request's 503.
    const key = await createTestKey(['graphql:read']);
    const page = (format: string) =>
      `learningOpportunities(filter: { format: [${format}] }) { pagination { totalCount } }`;
    await lock();
    try {
      const started = performance.now();
      const res = await graphql(api, key, `{ a: ${page('ONLINE')} b: ${page('IN_PERSON')} c: ${page('HYBRID')} }`);
      const took = performance.now() - started;
      expect(res.status).to.equal(503);
      expect(res.body.errors?.[0]?.extensions?.code).to.equal('SERVICE_UNAVAILABLE');
      expect(took, 'three aliases, one deadline').to.be.within(READ_TIMEOUT_MS - 50, 2 * READ_TIMEOUT_MS - 500);
      await until(async () => (await running()) === 0, 2000);
    } finally {
      await unlock();
    }
  });

  it('refuses the later aliases of a GraphQL request at once when one was not admitted', async () => {
    // Each alias waited in line again: the 429 came after one QUERY_QUEUE_WAIT_MS per alias.
    const key = await createTestKey(['catalog:read', 'graphql:read']);
    const aliases = Array.from(
      { length: 8 },
      (_, i) => `a${i}: learningOpportunities(filter: { format: [ONLINE] }) { pagination { totalCount } }`,
    );
    await lock();
    try {
      const holding = getJson(api, FILTERED, key); // the key's one slot, held by the lock
      await until(async () => (await running()) === 1, 2000);
      const started = performance.now();
      const res = await graphql(api, key, `{ ${aliases.join(' ')} }`);
      const took = performance.now() - started;
      expect(res.status).to.equal(429);
      const codes = res.body.errors?.map((e) => e.extensions?.code) ?? [];
      expect(codes).to.have.length.above(0);
      expect(new Set(codes)).to.deep.equal(new Set(['RATE_LIMITED']));
      expect(took, 'one wait in line, not eight').to.be.below(QUEUE_WAIT_MS * 4);
      await unlock();
      expect((await holding).status).to.equal(200);
    } finally {
      await unlock();
    }
  });

  it("answers every alias of a filtered list in one GraphQL document, however few the key's slots", async () => {
    // The key has one slot: each alias waited for the slot an earlier alias of the same request
    // held, was refused after QUEUE_WAIT_MS, and took the whole answer with it.
    const key = await createTestKey(['graphql:read']);
    const page = (format: string) =>
      `learningOpportunities(filter: { format: [${format}] }) { pagination { totalCount } }`;
    const refusedByKey = async () =>
      Number(
        /lods_query_refused_total\{limit="key"\} (\d+)/.exec(await (await fetch(`${api.url}/metrics`)).text())?.[1] ??
          0,
      );
    const refusedBefore = await refusedByKey();
    await lock();
    let answer;
    try {
      // The first alias's read runs (blocked on the lock) for longer than a wait in line may last.
      answer = graphql<Record<string, { pagination: { totalCount: number } }>>(
        api,
        key,
        `{ a: ${page('ONLINE')} b: ${page('IN_PERSON')} c: ${page('ONLINE')} }`,
      );
      await until(async () => (await running()) === 1, 2000);
      await new Promise((resolve) => setTimeout(resolve, QUEUE_WAIT_MS * 2));
      expect(await running()).to.equal(1); // one slot, one statement at a time
    } finally {
      await unlock();
    }
    const res = await answer!;
    expect(res.status).to.equal(200);
    expect(res.body.errors).to.equal(undefined);
    expect(res.body.data?.a?.pagination.totalCount).to.equal(res.body.data?.c?.pagination.totalCount);
    expect(Object.keys(res.body.data ?? {})).to.deep.equal(['a', 'b', 'c']);
    // Not refused and then answered by a second run of the document (compiled-execution.ts runs an
    // answer with errors again): no alias was refused at all.
    expect(await refusedByKey()).to.equal(refusedBefore);
  });

  it('cancels the statement at once when the client goes away', async () => {
    const key = await createTestKey(['catalog:read']);
    await lock();
    try {
      const gone = new AbortController();
      const request = fetch(`${api.url}${FILTERED}`, {
        headers: { authorization: `Bearer ${key}` },
        signal: gone.signal,
      }).catch(() => null);
      await until(async () => (await running()) === 1, 2000);
      const abortedAt = performance.now();
      gone.abort();
      await request;
      // Long before the deadline (a loaded machine may take a moment to see the socket close).
      await until(async () => (await running()) === 0, READ_TIMEOUT_MS - 1000);
      expect(performance.now() - abortedAt).to.be.below(READ_TIMEOUT_MS - 500);
      // Its slot is free again: the key is admitted at once.
      await unlock();
      expect((await getJson(api, FILTERED, key)).status).to.equal(200);
    } finally {
      await unlock();
    }
  });

  it('cancels the statements of pipelined requests too when their connection closes', async () => {
    // Requests queued behind another on one connection: their responses are not attached to the
    // socket yet, and only the socket says that the client left (before, they ran to their deadline).
    const keys = [await createTestKey(['catalog:read']), await createTestKey(['catalog:read'])];
    await lock();
    try {
      const socket = await openSocket(api.url);
      socket.on('error', () => {});
      socket.write(
        keys.map((key) => `GET ${FILTERED} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`).join(''),
      );
      await until(async () => (await running()) === 2, 2000);
      const closedAt = performance.now();
      socket.destroy();
      await until(async () => (await running()) === 0, READ_TIMEOUT_MS);
      expect(performance.now() - closedAt, 'long before the deadline').to.be.below(READ_TIMEOUT_MS - 1500);
    } finally {
      await unlock();
    }
  });
});
