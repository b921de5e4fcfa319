// A DATABASE_URL naming a database that does not exist: created on first use when the role may, else
// refused in words an operator can act on (a role without CREATEDB got pg's bare "permission denied").
import { expect } from 'chai';
import { connectCreatingDatabase, NO_SUCH_DATABASE } from '../../src/db/create-database.ts';
import { testDb } from '../hooks.ts';

const ROLE = 'lods_test_no_createdb';

describe('a database that does not exist yet', () => {
  const url = (user: string, password: string, database: string) => {
    const u = new URL(testDb().url);
    [u.username, u.password, u.pathname] = [user, password, `/${database}`];
    return u.toString();
  };
  before(async () => {
    await testDb().pool.query(`drop role if exists ${ROLE}`);
    await testDb().pool.query(`create role ${ROLE} login nocreatedb password 'pw'`);
  });
  after(() => testDb().pool.query(`drop role if exists ${ROLE}`));

  it('is refused, naming it and what to do, when the role may not create databases', async () => {
    const error = await connectCreatingDatabase(url(ROLE, 'pw', 'lods_never_created')).then(
      () => expect.fail('connected'),
      (e: Error & { code?: string }) => e,
    );
    expect(error.message).to.equal(
      'database "lods_never_created" does not exist, and this role may not create it: create the database, or grant the role CREATEDB',
    );
    expect(error.code).to.equal(NO_SUCH_DATABASE);
    const { rows } = await testDb().pool.query(`select 1 from pg_database where datname = 'lods_never_created'`);
    expect(rows).to.deep.equal([]);
  });
});
