// DB_STATEMENT_TIMEOUT_MS bounds every statement of the service's pool, on every connection; the
// migrations, which may rightly wait or run longer, are not bounded by it (the service's start or
// `migrate`).
import { expect } from 'chai';
import pg from 'pg';
import { connectDatabase, type Database } from '../../src/app/database.ts';
import { testDb } from '../hooks.ts';
import { REPO } from '../support/service-process.ts';
import { TEST_SECRET_KEY } from '../support/webhooks.ts';
import { execFileChild } from '../support/child-processes.ts';

describe('statement timeout on the pool', () => {
  let db: Database;
  before(async () => {
    db = await connectDatabase(testDb().url, {
      poolMax: 3,
      connectTimeoutMs: 3000,
      statementTimeoutMs: 300,
      migrate: true,
    });
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

  it('does not bound `npm run cli -- migrate`: it waits for a lock held longer than the limit, then succeeds', async function () {
    this.timeout(30_000);
    const holder = new pg.Client({ connectionString: testDb().url });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('lock table mikro_orm_migrations in access exclusive mode');
      const run = new Promise<{ code: number; stderr: string; stdout: string }>((resolve) => {
        const env = {
          ...process.env,
          DATABASE_URL: testDb().url,
          DB_STATEMENT_TIMEOUT_MS: '300',
          LOG_LEVEL: 'silent',
          SECRET_ENCRYPTION_KEY: TEST_SECRET_KEY,
        };
        execFileChild(
          process.execPath,
          ['src/cli/main.ts', 'migrate', '--json'],
          { cwd: REPO, env },
          (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
        );
      });
      // Once the migrator waits for the lock, hold it for twice the limit.
      for (;;) {
        const waiting = await holder.query(
          "select 1 from pg_locks l join pg_class c on c.oid = l.relation where c.relname = 'mikro_orm_migrations' and not l.granted",
        );
        if (waiting.rowCount) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      await new Promise((r) => setTimeout(r, 600));
      await holder.query('commit');
      const result = await run;
      expect(result.code, result.stderr).to.equal(0);
      expect(JSON.parse(result.stdout)).to.deep.equal({ applied: [], newer: [] });
    } finally {
      await holder.end();
    }
  });
});
