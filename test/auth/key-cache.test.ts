// The API key cache (src/auth/key-cache.ts) on the real database and a real LISTEN connection: what
// it keeps, what it drops, and when it refuses to keep anything. Look-ups are counted by wrapping
// the real pool's query (the statements still run).
import { expect } from 'chai';
import type { Pool, QueryConfig } from 'pg';
import { createApiKey, hashKey, type Principal } from '../../src/auth/api-keys.ts';
import { createKeyCache, type KeyCache } from '../../src/auth/key-cache.ts';
import { createListenConnection, type ListenConnection } from '../../src/db/listen-connection.ts';
import type { Queryable } from '../../src/db/read-replicas.ts';
import { listenConnectionUp } from '../../src/kernel/metrics.ts';
import { silentLogger } from '../support/api.ts';
import { testDb } from '../hooks.ts';

/** The real pool, counting the key look-ups it runs. */
function countingPool(pool: Pool): Queryable & { lookUps: () => number } {
  let lookUps = 0;
  return {
    query: (config: QueryConfig) => {
      if (config.name === 'api-key-auth') lookUps++;
      return pool.query(config);
    },
    lookUps: () => lookUps,
  };
}

const newKey = async (name: string) => {
  const created = await createApiKey(testDb().orm.em.fork(), { name, scopes: ['catalog:read'] });
  return { id: created.id, hash: hashKey(created.key) };
};
const revokeBySql = (id: string) => testDb().pool.query('update api_key set revoked_at = now() where id = $1', [id]);

/** Waits until the cache's LISTEN connection is up (its subscriber heard `listening(true)`). */
async function listening(cache: KeyCache): Promise<ListenConnection> {
  let up!: () => void;
  const ready = new Promise<void>((resolve) => (up = resolve));
  const subscriber = { ...cache.subscriber, listening: (on: boolean) => (cache.subscriber.listening(on), on && up()) };
  const connection = createListenConnection({ url: testDb().url, subscribers: [subscriber], logger: silentLogger });
  await ready;
  return connection;
}

/** The gauge of this (test) process: no API runs in this file, so only these tests' connections set it. */
const connectionUp = async () => (await listenConnectionUp.get()).values[0]?.value;

// Generous for a loaded 2-core machine, and still far below the 60 s age bound the caches here have.
async function until(check: () => Promise<boolean>, withinMs = 10_000): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > withinMs) throw new Error(`not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return performance.now() - started;
}

describe('API key cache', () => {
  let primary: ReturnType<typeof countingPool>;
  let fallback: ReturnType<typeof countingPool>;
  const connections: ListenConnection[] = [];
  const options = { maxAgeMs: 60_000, maxEntries: 100 };
  const cacheOf = (overrides: Partial<typeof options> & { now?: () => number } = {}) =>
    createKeyCache({ primary: primary as unknown as Pool, fallback }, { ...options, ...overrides });
  const live = async (cache: KeyCache) => connections.push(await listening(cache));

  beforeEach(() => {
    primary = countingPool(testDb().pool);
    fallback = countingPool(testDb().pool);
  });
  afterEach(async () => {
    await Promise.all(connections.splice(0).map((c) => c.close()));
  });

  it('looks a key up once on the primary, then answers from memory', async () => {
    const cache = cacheOf();
    await live(cache);
    const { hash } = await newKey('cached');
    const first = await cache.principal(hash);
    for (let i = 0; i < 5; i++) expect(await cache.principal(hash)).to.deep.equal(first);
    expect(first?.scopes.has('catalog:read')).to.equal(true);
    expect([primary.lookUps(), fallback.lookUps()]).to.deep.equal([1, 0]);
  });

  it('looks a key up once for many asking at once (a key change makes every long poll of it recheck together)', async () => {
    const cache = cacheOf();
    await live(cache);
    const { hash } = await newKey('asked together');
    const answers = await Promise.all(Array.from({ length: 20 }, () => cache.principal(hash)));
    expect(answers.every((a) => a !== null && a.keyId === answers[0]!.keyId)).to.equal(true);
    expect(primary.lookUps()).to.equal(1);
  });

  it('forgets a key revoked in SQL as soon as the notification arrives', async () => {
    const cache = cacheOf();
    await live(cache);
    const { id, hash } = await newKey('revoked by hand');
    expect(await cache.principal(hash)).to.not.equal(null);
    await revokeBySql(id);
    const ms = await until(async () => (await cache.principal(hash)) === null);
    expect(ms).to.be.below(10_000); // the age bound is 60 s here: only the notification can do this
  });

  it('caches nothing while not listening: every request looks its key up (on the read pool), and a revocation counts at once', async () => {
    const cache = cacheOf();
    const { id, hash } = await newKey('no listener');
    expect(await cache.principal(hash)).to.not.equal(null);
    expect(await cache.principal(hash)).to.not.equal(null);
    expect([primary.lookUps(), fallback.lookUps()]).to.deep.equal([0, 2]);
    await revokeBySql(id);
    expect(await cache.principal(hash)).to.equal(null);
  });

  it('drops everything when the LISTEN connection is lost, and listens again after reconnecting (lods_listen_connection_up says so)', async () => {
    const cache = cacheOf();
    await live(cache);
    expect(await connectionUp()).to.equal(1);
    const { id, hash } = await newKey('reconnect');
    await cache.principal(hash);
    await testDb().pool.query(
      "select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'lods-listen' and datname = current_database()",
    );
    // Lost: look-ups go to the read pool until the connection is back.
    await until(async () => (await cache.principal(hash), fallback.lookUps() > 0));
    expect(await connectionUp()).to.equal(0);
    // Back (the reconnect listens on the channel again): cached once more, and a revocation still arrives.
    await until(async () => {
      await cache.principal(hash);
      const before = [primary.lookUps(), fallback.lookUps()];
      await cache.principal(hash);
      return primary.lookUps() === before[0] && fallback.lookUps() === before[1]; // answered from memory
    });
    expect(await connectionUp()).to.equal(1);
    await revokeBySql(id);
    await until(async () => (await cache.principal(hash)) === null);
  });

  it('does not keep a look-up that was under way when a change arrived', async () => {
    const cache = cacheOf();
    await live(cache);
    const { hash } = await newKey('race');
    const pending = cache.principal(hash);
    cache.subscriber.notified(''); // a change commits while the look-up runs
    expect(await pending).to.not.equal(null); // that request is answered...
    await cache.principal(hash);
    expect(primary.lookUps()).to.equal(2); // ...but nothing was kept
  });

  it('looks a key up again after maxAgeMs, and never keeps unknown keys', async () => {
    let now = 1_000_000;
    const cache = cacheOf({ maxAgeMs: 1000, now: () => now });
    await live(cache);
    const { hash } = await newKey('aged');
    await cache.principal(hash);
    now += 999;
    await cache.principal(hash);
    expect(primary.lookUps()).to.equal(1);
    now += 2;
    await cache.principal(hash);
    expect(primary.lookUps()).to.equal(2);
    const unknown = hashKey('lods_' + 'x'.repeat(43));
    for (let i = 0; i < 3; i++) expect(await cache.principal(unknown)).to.equal(null);
    expect(primary.lookUps()).to.equal(5);
  });

  it('holds at most maxEntries keys, dropping the oldest', async () => {
    const cache = cacheOf({ maxEntries: 2 });
    await live(cache);
    const [a, b, c] = [await newKey('a'), await newKey('b'), await newKey('c')];
    for (const k of [a, b, c]) await cache.principal(k.hash); // 3 look-ups; a is dropped for c
    await cache.principal(c.hash);
    await cache.principal(b.hash);
    expect(primary.lookUps()).to.equal(3);
    await cache.principal(a.hash);
    expect(primary.lookUps()).to.equal(4);
  });

  it('with maxAgeMs 0 keeps nothing', async () => {
    const cache = cacheOf({ maxAgeMs: 0 });
    await live(cache);
    const { hash } = await newKey('off');
    const answers: (Principal | null)[] = [await cache.principal(hash), await cache.principal(hash)];
    expect(answers.every((p) => p !== null)).to.equal(true);
    expect([primary.lookUps(), fallback.lookUps()]).to.deep.equal([0, 2]);
  });
});
