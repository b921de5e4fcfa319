// DB_STATEMENT_TIMEOUT_MS bounds every statement of the service's pool, on connections opened
// before the setting was applied (by the migrations) as on new ones.
import { expect } from 'chai';
import { connectDatabase, type Database } from '../../src/database.ts';
import { testDb } from '../hooks.ts';

describe('statement timeout on the pool', () => {
  let db: Database;
  before(async () => {
    db = await connectDatabase(testDb().url, { poolMax: 3, connectTimeoutMs: 3000, statementTimeoutMs: 300, migrate: true });
  });
  after(() => db.close());

  it('cancels a statement running longer than the limit, on every connection of the pool', async () => {
    // Three at once: each holds its own connection, so all three connections are tried.
    const results = await Promise.allSettled([1, 2, 3].map(() => db.pool.query('select pg_sleep(2)')));
    for (const result of results) {
      expect(result.status).to.equal('rejected');
      expect((result as PromiseRejectedResult).reason.code).to.equal('57014'); // query_canceled
    }
    const { rows } = await db.pool.query<{ statement_timeout: string }>('show statement_timeout');
    expect(rows[0]!.statement_timeout).to.equal('300ms');
  });
});
