// A database that refuses new connections (an operator's `ALTER DATABASE ... ALLOW_CONNECTIONS
// false` for maintenance, a password rotated, the database dropped and restored) is an outage like
// any other: PostgreSQL answers the connection attempt with a FATAL error (55000, 28P01, 3D000), and
// requests that need the database get 503 with Retry-After, not 500. Found from outside: reads
// answered 500 /problems/internal and GraphQL writes INTERNAL_SERVER_ERROR, and every repeating task
// logged a warning per pass instead of one when the outage began.
import { expect } from 'chai';
import { getJson } from '../support/api.ts';
import { expectProblem } from '../support/problem.ts';
import { eventually } from '../support/webhooks.ts';
import { isDatabaseUnavailable } from '../../src/kernel/errors.ts';
import { testDb } from '../hooks.ts';
import { type OwnDatabase, startOnOwnDatabase } from '../views/own-database.ts';

describe('a database refusing connections', function () {
  this.timeout(60_000);
  let own: OwnDatabase;
  let name: string;
  const allow = (yes: boolean) =>
    testDb().pool.query(`alter database ${JSON.stringify(name)} allow_connections ${yes ? 'true' : 'false'}`);

  before(async () => {
    own = await startOnOwnDatabase();
    name = decodeURIComponent(new URL(own.db.url).pathname.slice(1));
  });
  after(async () => {
    await allow(true);
    await own.close();
  });

  it('answers 503 with Retry-After while it refuses, and serves again once it allows', async () => {
    const list = '/v1/learning-opportunities?limit=1';
    expect((await getJson(own.api, list, own.key)).status).to.equal(200);
    await allow(false);
    await testDb().pool.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [name]);
    const refused = await getJson(own.api, list, own.key);
    const problem = expectProblem(refused, 503);
    expect(problem.type).to.equal('/problems/service-unavailable');
    expect(refused.headers.get('retry-after')).to.equal('5');
    await allow(true);
    await eventually(async () => (await getJson(own.api, list, own.key)).status === 200, 10_000, 'served again');
  });

  it('counts a FATAL answer to a connection attempt as the database unavailable, other errors not', () => {
    const fatal = (code: string) => Object.assign(new Error('x'), { code, severity: 'FATAL' });
    for (const code of ['55000', '28P01', '3D000']) expect(isDatabaseUnavailable(fatal(code)), code).to.equal(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('x'), { code: '55000', severity: 'ERROR' }))).to.equal(false);
  });
});
