// A read given up on (its client gone, its deadline past) stops in PostgreSQL, even when the cancel
// request reaches the backend before the statement does. PostgreSQL drops a cancel that arrives
// while the backend waits for the client's next message; on a loaded machine a client gone 60 ms
// into a search left its statement running to the 5 s statement timeout (found from outside). Here
// the statement is held back on its way to the server (the pool's client sends it 150 ms late), so
// the first cancel always arrives first; the statement must stop all the same, and `ended()` (what
// the query class's slot waits for) must say when it has.
import { expect } from 'chai';
import pg from 'pg';
import { readsWithin } from '../../src/db/deadline-reads.ts';
import { admittedBy, runAsKey } from '../../src/db/key-connections.ts';
import { createQueryGate } from '../../src/kernel/query-gate.ts';
import { openQueryPool, type QueryPool } from '../../src/db/query-pool.ts';
import { testDb } from '../hooks.ts';

const LATE_MS = 150;
const SLEEP_S = 4;

const ownQuery = new WeakMap<object, unknown>();

/** The query pool's connections, each sending its statements LATE_MS after they are asked for. */
function lateSource(pool: QueryPool): QueryPool {
  return {
    ...pool,
    async connect() {
      const client = await pool.connect();
      // Once per connection: a cancelled read's connection goes back to the pool, and wrapped again
      // its statements would be sent twice as late.
      const query = (ownQuery.get(client) ?? client.query.bind(client)) as (
        config: pg.QueryConfig,
      ) => Promise<pg.QueryResult>;
      ownQuery.set(client, query);
      (client as { query: unknown }).query = (config: pg.QueryConfig) =>
        new Promise((resolve) => setTimeout(resolve, LATE_MS)).then(() => query(config));
      return client;
    },
  };
}

/** Statements of this test's marker running in PostgreSQL now. */
async function sleepers(marker: string): Promise<number> {
  const { rows } = await testDb().pool.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity where state = 'active' and query like $1 and pid <> pg_backend_pid()`,
    [`%${marker}%`],
  );
  return rows[0]!.n;
}

/** When a statement of this marker was last seen running, polling from now until it has been seen and is gone. */
async function lastSeenRunning(marker: string): Promise<number> {
  let seen = 0;
  const until = performance.now() + 8000;
  while (performance.now() < until) {
    const at = performance.now(); // before the poll: it saw the statement no earlier than this
    if ((await sleepers(marker)) > 0) seen = at;
    else if (seen > 0) return seen;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return seen;
}

describe('a read given up on before its statement reached the server', function () {
  this.timeout(20_000);
  let pool: QueryPool;
  before(async () => {
    pool = openQueryPool({ url: testDb().url, max: 1, readTimeoutMs: 10_000, connectTimeoutMs: 3000 });
    (await pool.connect()).release(); // connected: the statement is on its way when the read is given up on
  });
  after(() => pool.close());

  for (const how of ['disconnect', 'deadline'] as const) {
    it(`stops in PostgreSQL all the same (${how}), and ended() resolves only once it has`, async () => {
      const marker = `late_${how}_${Date.now()}`;
      const gone = new AbortController();
      const reads = readsWithin(lateSource(pool), how === 'deadline' ? 30 : 0, gone.signal);
      const answer = reads.query({ text: `select pg_sleep(${SLEEP_S}) as ${marker}` }).then(
        () => null,
        (error: Error) => error,
      );
      if (how === 'disconnect') setTimeout(() => gone.abort(new Error('client gone')), 30);
      const started = performance.now();
      const error = await answer;
      expect(error, 'the caller is answered at once').to.be.an('error');
      expect(performance.now() - started, 'not when the statement would end').to.be.below(1000);
      // ended() resolves once the statement has stopped (or never ran), not before.
      const sleepingAtEnd = reads.ended().then(() => sleepers(marker));
      // The statement arrives, starts, and is stopped by a later cancel, long before its sleep ends
      // (with one cancel only, it slept on after its connection was closed at the 1 s grace).
      await new Promise((resolve) => setTimeout(resolve, LATE_MS + 100));
      while ((await sleepers(marker)) > 0 && performance.now() - started < 1500)
        await new Promise((resolve) => setTimeout(resolve, 25));
      expect(await sleepers(marker), 'running in PostgreSQL').to.equal(0);
      expect(await sleepingAtEnd, 'running when ended() resolved').to.equal(0);
    });
  }
});

// A backend may run on after its statement was cancelled: it waits for its parallel workers and
// removes its temporary files before it is idle (over a second on a busy server, found from outside
// at a million records), or it may not take the cancel at once. ended() must wait for it: before,
// it resolved at the cancel's answer or 1 s after the cancel, and the query class admitted more
// statements than its limits while those ran. Here a function ignores cancels for STUBBORN_MS, on a
// session that does not check its client's connection (the query pool's would: query-pool.ts).
const STUBBORN_MS = 2500;

describe('a cancelled read whose backend runs on', function () {
  this.timeout(20_000);
  let pool: pg.Pool;
  before(async () => {
    pool = new pg.Pool({ connectionString: testDb().url, max: 2 });
    await pool.query(`
      create or replace function test_stubborn(ms integer) returns integer language plpgsql as $$
      declare
        until timestamptz := clock_timestamp() + ms * interval '1 ms';
      begin
        -- Cancels come every 50 ms. One taken between statements outside a handler ends the
        -- function: the wait runs inside one, whose handler is empty, and a cancel taken as that
        -- handler ends (an empty list still checks for one) is caught by a second one around it.
        loop
          begin
            loop
              begin
                while clock_timestamp() < until loop
                  perform pg_sleep(0.02);
                end loop;
                return 1;
              exception when query_canceled then -- the cancel is ignored
              end;
            end loop;
          exception when query_canceled then
          end;
        end loop;
      end $$`);
  });
  after(async () => {
    await pool.query('drop function if exists test_stubborn(integer)');
    await pool.end();
  });

  // Were the function stopped by a cancel after all, a run would test nothing: it is run again.
  it('holds ended() until the backend is idle, not only until the cancel is answered', async function () {
    this.timeout(3 * 8000);
    for (let attempt = 1; ; attempt++) {
      const marker = `stubborn_${Date.now()}`;
      const reads = readsWithin(pool, 200);
      const started = performance.now();
      const lastSeen = lastSeenRunning(marker);
      const error = await reads.query({ text: `select test_stubborn(${STUBBORN_MS}) as ${marker}` }).then(
        () => null,
        (e: Error) => e,
      );
      expect(error?.message, 'the caller is answered at its deadline').to.match(/did not finish within 200 ms/);
      expect(performance.now() - started).to.be.below(1500);
      await reads.ended();
      const endedAt = performance.now();
      const runningAtEnd = await sleepers(marker);
      const seen = await lastSeen;
      if (seen - started < STUBBORN_MS - 500 && attempt < 3) continue;
      expect(runningAtEnd, 'running when ended() resolved').to.equal(0);
      expect(endedAt, 'ended() resolved after the backend was last seen running').to.be.at.least(seen);
      expect(endedAt - started, 'ended() waited for the backend').to.be.at.least(STUBBORN_MS - 100);
      return;
    }
  });

  it("keeps a key's slot of one request's read whose client left until the backend is idle (a view's page)", async function () {
    // The main pool's reads of a request are admitted per key (admittedBy; a view's page also by the
    // query class's gate): the slot was freed when the caller was answered, while the statement ran on.
    this.timeout(3 * 8000);
    for (let attempt = 1; ; attempt++) {
      const marker = `stubborn_slot_${Date.now()}`;
      const reads = admittedBy(createQueryGate({ perKey: 1, total: 10, queueWaitMs: 10_000 }))(readsWithin(pool, 0));
      const gone = new AbortController();
      const lastSeen = lastSeenRunning(marker);
      const first = runAsKey('k', () =>
        reads.within!(gone.signal).query({ text: `select test_stubborn(${STUBBORN_MS}) as ${marker}` }),
      ).then(
        () => null,
        (e: Error) => e,
      );
      while ((await sleepers(marker)) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      const goneAt = performance.now();
      gone.abort(new Error('client gone'));
      expect(await first, 'the caller is answered at once').to.be.an('error');
      expect(performance.now() - goneAt).to.be.below(1000);
      // The key's next read waits for the slot: until the first statement has stopped.
      await runAsKey('k', () => reads.query({ text: 'select 1 as one' }));
      const admittedAt = performance.now();
      const runningAtAdmission = await sleepers(marker);
      const seen = await lastSeen;
      if (seen - goneAt < STUBBORN_MS - 1000 && attempt < 3) continue;
      expect(runningAtAdmission, 'running when the next read was admitted').to.equal(0);
      expect(admittedAt, 'admitted after the first statement was last seen running').to.be.at.least(seen);
      expect(admittedAt - goneAt).to.be.at.least(STUBBORN_MS - 1000);
      return;
    }
  });
});
