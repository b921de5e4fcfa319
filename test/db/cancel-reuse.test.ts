// A read cancelled (its client gone, its deadline past) hands its connection back to the pool once the
// backend is idle and the server has answered every cancel request: closed after each cancel, one
// key's clients leaving mid-read a hundred times a second made the pool open a connection for each,
// and every key's reads and the writes waited behind those connection starts. Handed back, a cancel
// must never stop the next statement run on that connection, another caller's.
import { expect } from 'chai';
import pg from 'pg';
import { readsWithin } from '../../src/db/deadline-reads.ts';
import { testDb } from '../hooks.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a cancelled read’s connection', function () {
  this.timeout(60_000);
  let pool: pg.Pool;
  before(() => {
    pool = new pg.Pool({ connectionString: testDb().url, max: 1 });
  });
  after(() => pool.end());

  const backendPid = async () => (await pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;

  /** A read of `sql` whose caller leaves after `leaveMs`; resolves once its statement has ended. */
  async function leftAfter(sql: string, leaveMs: number): Promise<void> {
    const gone = new AbortController();
    const reads = readsWithin(pool, 0).within(gone.signal);
    const answer = reads.query({ text: sql }).catch((error: Error) => error);
    setTimeout(() => gone.abort(new Error('client gone')), leaveMs);
    await answer;
    await reads.ended();
  }

  it('goes back to the pool, the same backend, once the statement has stopped', async () => {
    const before = await backendPid();
    await leftAfter('select pg_sleep(5)', 100);
    expect(await backendPid(), 'the same connection, reused').to.equal(before);
  });

  it('runs the next statement untouched by the cancels, whenever the caller left', async () => {
    // Leaving before the statement reached the server (0 ms), as it started, and while it ran: the
    // cancels go on every 50 ms until the backend is idle; the next statement sleeps past several
    // such rounds, and must end normally.
    const failures: string[] = [];
    for (let round = 0; round < 12; round++) {
      await leftAfter('select pg_sleep(2)', [0, 1, 5, 30, 120][round % 5]!);
      const next = await pool.query('select pg_sleep(0.2), 1 as one').then(
        () => null,
        (error: Error & { code?: string }) => `${error.code}: ${error.message}`,
      );
      if (next) failures.push(`round ${round}: ${next}`);
      await sleep(10);
    }
    expect(failures).to.deep.equal([]);
  });
});
