// A connection that breaks while a request holds it (the database restarted, a replica stopped, an
// operator's pg_terminate_backend) fails that request's statement and nothing else: pg emits 'error'
// on the client, which pg-pool listens to only while the client is idle, and an unhandled 'error'
// would end the process (seen once as an uncaught "Connection terminated unexpectedly" in the
// read-replica tests).
import { expect } from 'chai';
import { openQueryPool } from '../../src/db/query-pool.ts';
import { testDb } from '../hooks.ts';

describe('a pooled connection that breaks while held', () => {
  it('fails the statement in flight, is dropped, and the next read gets a new connection', async () => {
    const queryPool = openQueryPool({ url: testDb().url, max: 1, readTimeoutMs: 5000, connectTimeoutMs: 3000 });
    try {
      const client = await queryPool.connect();
      const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
      const pid = rows[0]!.pid;
      const running = client.query('select pg_sleep(5)').then(
        () => null,
        (error: Error) => error,
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      await testDb().pool.query('select pg_terminate_backend($1)', [pid]);
      const failed = await running;
      expect(failed, 'the statement in flight').to.be.an('error');
      // The 'error' event of the held client comes after the statement's rejection.
      await new Promise((resolve) => setTimeout(resolve, 200));
      client.release(failed!);
      const next = await queryPool.connect();
      try {
        const again = await next.query<{ pid: number }>('select pg_backend_pid() as pid');
        expect(again.rows[0]!.pid).to.not.equal(pid);
      } finally {
        next.release();
      }
    } finally {
      await queryPool.close();
    }
  });
});
