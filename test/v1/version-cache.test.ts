// The record version cache (src/catalog/version-cache.ts): a conditional GET of a record the
// process has served is answered 304 without a statement, and every way a record can change (this
// process's writes, another process's, SQL by hand, large statements, TRUNCATE) makes the old tag
// get the new answer at once (this process) or within the notification's trip (others), far below
// the cache's age bound (ETAG_CACHE_MAX_AGE_MS, 10 s). Statements are counted by wrapping the real
// pool's query (they still run).
import { expect } from 'chai';
import type { QueryConfig } from 'pg';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { createVersionCache } from '../../src/catalog/version-cache.ts';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { recordStatements } from '../support/statement-recorder.ts';
import { createTestKey, getJson, startTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput, createRecord } from '../support/factories.ts';

// Half the 10 s age bound: only the notification can do it, with room for a loaded 2-core machine.
const WITHIN_MS = 5000;

describe('record version cache (304 without a statement)', () => {
  let api: Api;
  let other: Api; // a second API process on the same database
  let key: string;
  const reads: string[] = [];
  let restore: () => void;

  before(async () => {
    [api, other] = await Promise.all([startTestApi(), startTestApi()]);
    key = await createTestKey(['catalog:read']);
    restore = recordStatements(testDb().pool, (name) => {
      if (name.startsWith('lo-one')) reads.push(name);
    });
  });
  after(async () => {
    restore();
    await Promise.all([api.close(), other.close()]);
  });

  const path = (id: string) => `/v1/learning-opportunities/${id}`;
  const get = (id: string, etag?: string) =>
    getJson(api, path(id), key, etag ? { headers: { 'if-none-match': etag } } : {});
  /** The statements one conditional GET runs, and its answer. */
  async function conditional(id: string, etag: string) {
    reads.length = 0;
    const res = await get(id, etag);
    return { status: res.status, statements: reads.length, etag: res.headers.get('etag') };
  }
  /**
   * Served 304 from memory: the process listens (it connects after start) and has seen the tag. Three
   * hits in a row, 100 ms apart: the notification of the record's own write, arriving late on a slow
   * machine, evicts a tag cached just before it (a miss, never a wrong answer; seen once in CI).
   */
  async function cached(id: string): Promise<string> {
    const etag = (await get(id)).headers.get('etag')!;
    let hits = 0;
    await until(async () => {
      if (hits === 0) await get(id);
      hits = (await conditional(id, etag)).statements === 0 ? hits + 1 : 0;
      if (hits > 0 && hits < 3) await new Promise((resolve) => setTimeout(resolve, 100));
      return hits === 3;
    });
    return etag;
  }
  /** Repeats `check` until it holds, for at most WITHIN_MS; returns how long that took. */
  async function until(check: () => Promise<boolean>): Promise<number> {
    const started = performance.now();
    while (!(await check())) {
      expect(performance.now() - started, 'within the notification trip').to.be.below(WITHIN_MS);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return performance.now() - started;
  }

  it('answers a matching If-None-Match with 304 and no statement; anything else still reads', async () => {
    const record = await createRecord(api.writes);
    const etag = await cached(record.id);
    const hit = await conditional(record.id, etag);
    expect(hit).to.deep.equal({ status: 304, statements: 0, etag });
    expect(await conditional(record.id, '"0123456789abcdef0123456789abcdef"')).to.deep.include({
      status: 200,
      statements: 1,
      etag,
    });
    expect(await conditional(record.id, `"other", W/${etag}`)).to.deep.include({ status: 304, statements: 0 });
    // `*` holds any version: a record the cache knows exists, so no statement either.
    expect(await conditional(record.id, '*')).to.deep.equal({ status: 304, statements: 0, etag });
  });

  it("answers this process's own write with the new version at once", async () => {
    const input = buildLearningOpportunityInput();
    await api.writes.upsert(parseLearningOpportunityInput(input));
    await api.writes.publish(input.id);
    const etag = await cached(input.id);
    await api.writes.upsert(parseLearningOpportunityInput({ ...input, title: 'Changed here' }));
    const after = await get(input.id, etag);
    expect(after.status).to.equal(200);
    expect((after.body as { title: string }).title).to.equal('Changed here');
  });

  it("answers another process's write, an archive and a delete within the notification's trip", async () => {
    const input = buildLearningOpportunityInput();
    await other.writes.upsert(parseLearningOpportunityInput(input));
    await other.writes.publish(input.id);
    let etag = await cached(input.id);
    await other.writes.upsert(parseLearningOpportunityInput({ ...input, title: 'Changed elsewhere' }));
    await until(async () => (await get(input.id, etag)).status === 200);
    expect(((await get(input.id)).body as { title: string }).title).to.equal('Changed elsewhere');

    etag = await cached(input.id);
    await other.writes.archive(input.id);
    await until(async () => (await get(input.id, etag)).status === 404);

    await other.writes.publish(input.id);
    etag = await cached(input.id);
    await other.writes.delete(input.id);
    await until(async () => (await get(input.id, etag)).status === 404);
  });

  it('drops what SQL by hand changed, and everything after a statement that changed more than 100 records', async () => {
    const [a, b, c] = [
      (await createRecord(api.writes)).id,
      (await createRecord(api.writes)).id,
      (await createRecord(api.writes)).id,
    ];
    const tags = [await cached(a), await cached(b), await cached(c)];
    // An unpublish by hand names one id: that record 404s, the others stay cached.
    await testDb().pool.query(`update learning_opportunity set status = 'ARCHIVED' where id = $1`, [a]);
    await until(async () => (await get(a, tags[0])).status === 404);
    expect(await conditional(b, tags[1]!)).to.deep.include({ status: 304, statements: 0 });

    // A statement touching more than 100 rows notifies without ids: everything is read again.
    const inputs = Array.from({ length: 101 }, () => buildLearningOpportunityInput());
    await api.writes.upsertMany(inputs.map((i) => parseLearningOpportunityInput(i)));
    await api.writes.publishMany(inputs.map((i) => i.id));
    await testDb().pool.query('update learning_opportunity set updated_at = updated_at');
    await until(async () => (await conditional(b, tags[1]!)).statements === 1);
    expect(await conditional(c, tags[2]!)).to.deep.include({ status: 304, statements: 1 });
  });

  it('drops everything on TRUNCATE', async () => {
    const record = await createRecord(api.writes);
    const etag = await cached(record.id);
    await testDb().pool.query('truncate learning_opportunity cascade');
    await until(async () => (await get(record.id, etag)).status === 404);
  });
});

describe('record version cache, without a notification connection', () => {
  it('keeps nothing until it listens, and forgets everything when listening stops', () => {
    const cache = createVersionCache({ maxAgeMs: 60_000, maxEntries: 10 });
    cache.keep('a', 'tag-a', cache.mark());
    expect(cache.get('a')).to.equal(undefined);
    cache.subscriber.listening(true);
    cache.keep('a', 'tag-a', cache.mark());
    expect(cache.get('a')).to.equal('tag-a');
    cache.subscriber.listening(false);
    expect(cache.get('a')).to.equal(undefined);
  });

  it('does not keep a read overtaken by a change, and drops only the ids a notification names', () => {
    const cache = createVersionCache({ maxAgeMs: 60_000, maxEntries: 10 });
    cache.subscriber.listening(true);
    cache.keep('a', 'tag-a', cache.mark());
    cache.keep('b', 'tag-b', cache.mark());
    const mark = cache.mark();
    cache.subscriber.notified('b,c');
    cache.keep('c', 'old-tag-c', mark); // read before the change, finished after it
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).to.deep.equal(['tag-a', undefined, undefined]);
  });

  it('is off with read replicas: every conditional GET reads', async () => {
    const db = testDb();
    let reads = 0;
    // A read pool other than the primary's, as with read replicas: the same database here.
    const readPool = { query: (config: QueryConfig) => db.pool.query(config), connect: () => db.pool.connect() };
    const api = await startTestApi({ db: { ...db, readPool } });
    // The API's reads take a connection and query on it (db/deadline-reads.ts): recordStatements counts there too.
    const restore = recordStatements(db.pool, (name) => (reads += name.startsWith('lo-one') ? 1 : 0));
    try {
      const key = await createTestKey(['catalog:read']);
      const record = await createRecord(api.writes);
      const etag = (await getJson(api, `/v1/learning-opportunities/${record.id}`, key)).headers.get('etag')!;
      await new Promise((resolve) => setTimeout(resolve, 200)); // time to listen, were it to
      reads = 0;
      for (let i = 0; i < 3; i++)
        expect(
          (await getJson(api, `/v1/learning-opportunities/${record.id}`, key, { headers: { 'if-none-match': etag } }))
            .status,
        ).to.equal(304);
      expect(reads).to.equal(3);
    } finally {
      restore();
      await api.close();
    }
  });
});
