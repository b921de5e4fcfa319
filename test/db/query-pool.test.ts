// The query class's connections (db/query-pool.ts): the read deadline as their statement timeout,
// and no parallel workers, so that an admitted statement is one backend (its limits count statements).
import { expect } from 'chai';
import { openQueryPool } from '../../src/db/query-pool.ts';
import { testDb } from '../hooks.ts';

describe('the query pool', () => {
  it('runs each statement as one backend, under the read deadline, without JIT', async () => {
    const pool = openQueryPool({ url: testDb().url, max: 1, readTimeoutMs: 4321, connectTimeoutMs: 3000 });
    try {
      const client = await pool.connect();
      try {
        const { rows } = await client.query<{ workers: string; timeout: string; jit: string; app: string }>(
          `select current_setting('max_parallel_workers_per_gather') as workers,
                  current_setting('statement_timeout') as timeout, current_setting('jit') as jit,
                  current_setting('application_name') as app`,
        );
        expect(rows[0]).to.deep.equal({ workers: '0', timeout: '4321ms', jit: 'off', app: 'lods-query' });
      } finally {
        client.release();
      }
    } finally {
      await pool.close();
    }
  });
});
