// Every pool of the service opens its sessions with JIT off (src/db/session-settings.ts), whatever
// the server's or the database's default: on PostgreSQL 15 with JIT, one page of a view's feed
// spent about a second compiling and missed the read deadline under load.
import { expect } from 'chai';
import pg from 'pg';
import { connectDatabase } from '../../src/app/database.ts';
import { openQueryPool } from '../../src/db/query-pool.ts';
import { startBoss } from '../../src/webhooks/queue/boss.ts';
import { testDb } from '../hooks.ts';
import { silentLogger } from '../support/api.ts';
import { testWebhookConfig } from '../support/webhooks.ts';

describe('the sessions of the service', function () {
  this.timeout(60_000);
  const url = () => testDb().url;

  // The test's database turns JIT on for every session, as a server's default may.
  before(async () => {
    const admin = new pg.Client({ connectionString: url() });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ name: string }>('select current_database() as name');
      await admin.query(`alter database ${rows[0]!.name} set jit = on`);
    } finally {
      await admin.end();
    }
  });

  const jitOf = async (query: (sql: string) => Promise<{ rows: { jit: string }[] }>) =>
    (await query('show jit')).rows[0]!.jit;

  it('start with JIT on where the database says so, unless they are the service’s', async () => {
    const plain = new pg.Client({ connectionString: url() });
    await plain.connect();
    try {
      expect(await jitOf((sql) => plain.query(sql))).to.equal('on');
    } finally {
      await plain.end();
    }
  });

  it('run with JIT off: the primary and ORM pool, the query pool, pg-boss', async () => {
    const db = await connectDatabase(url(), { poolMax: 2, connectTimeoutMs: 3000, migrate: false });
    const queryPool = openQueryPool({ url: url(), max: 1, readTimeoutMs: 2000, connectTimeoutMs: 3000 });
    const boss = await startBoss({ url: url(), config: testWebhookConfig(), logger: silentLogger, supervise: false });
    try {
      expect(await jitOf((sql) => db.pool.query(sql)), 'primary pool').to.equal('off');
      const orm = (await db.orm.em.getConnection().execute<{ jit: string }[]>('show jit'))[0]!.jit;
      expect(orm, 'ORM').to.equal('off');
      const client = await queryPool.connect();
      try {
        expect(await jitOf((sql) => client.query(sql)), 'query pool').to.equal('off');
      } finally {
        client.release();
      }
      const bossRows = (await boss.getDb().executeSql('show jit')) as { rows: { jit: string }[] };
      expect(bossRows.rows[0]!.jit, 'pg-boss').to.equal('off');
    } finally {
      await boss.stop({ graceful: false, close: true });
      await queryPool.close();
      await db.close();
    }
  });
});
