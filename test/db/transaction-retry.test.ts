// A transaction that PostgreSQL ends as a deadlock's victim runs again, whole (db/pg-transaction.ts):
// an operator's disable or enable meets the worker's settling statements on the same rows, and
// answered 500 before.
import { expect } from 'chai';
import { inTransaction } from '../../src/db/pg-transaction.ts';
import { testDb } from '../hooks.ts';
import { waitingForLock } from '../support/database.ts';

describe('transactions that lose a deadlock', function () {
  this.timeout(20_000);
  const table = 'deadlock_probe';
  before(async () => {
    await testDb().pool.query(
      `drop table if exists ${table}; create table ${table} (id int primary key, n int not null)`,
    );
    await testDb().pool.query(`insert into ${table} values (1, 0), (2, 0)`);
  });
  after(() => testDb().pool.query(`drop table if exists ${table}`));

  it('run again and commit once, while the other side of the deadlock commits too', async () => {
    const pool = testDb().pool;
    const other = await pool.connect();
    let runs = 0;
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    let go!: () => void;
    const otherWaits = new Promise<void>((resolve) => (go = resolve));
    let otherGranted!: Promise<unknown>;
    try {
      // The other side holds row 2, and checks for deadlocks only after 30 s. Our first run holds
      // row 1; the other side waits for it; then our run asks for row 2 and closes the cycle: its
      // check, 1 s later, finds it, and it is the victim.
      await other.query('begin');
      await other.query(`set local deadlock_timeout = '30s'`);
      await other.query(`update ${table} set n = n + 10 where id = 2`);
      const ours = inTransaction(pool, async (client) => {
        runs++;
        // The run again starts once the other side has row 1: on a loaded machine it took the row
        // first once (the other side's backend not yet scheduled), deadlocked again, and ran 3 times.
        if (runs > 1) await otherGranted;
        await client.query(`update ${table} set n = n + 1 where id = 1`);
        if (runs === 1) {
          holding();
          await otherWaits;
        }
        await client.query(`update ${table} set n = n + 1 where id = 2`);
        return runs;
      });
      await held;
      const otherUpdate = other.query(`update ${table} set n = n + 10 where id = 1`);
      otherGranted = otherUpdate;
      await waitingForLock(pool, 'n = n + 10 where id = 1');
      go();
      await otherUpdate; // granted once our first run is rolled back
      await other.query('commit');
      expect(await ours).to.equal(2);
    } finally {
      await other.query('rollback').catch(() => {});
      other.release();
    }
    const { rows } = await pool.query<{ id: number; n: number }>(`select id, n from ${table} order by id`);
    expect(rows).to.deep.equal([
      { id: 1, n: 11 },
      { id: 2, n: 11 },
    ]);
  });

  it('gives up on anything else at once', async () => {
    let runs = 0;
    const failed = await inTransaction(testDb().pool, async (client) => {
      runs++;
      await client.query('select 1/0');
    }).then(
      () => null,
      (error: { code?: string }) => error.code,
    );
    expect([failed, runs]).to.deep.equal(['22012', 1]);
  });
});
