// Who may create and migrate a database: `migrate` and the service's start, never another command
// (a mistyped DATABASE_URL must not create a database), and several of them at once apply each
// migration exactly once.
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { expect } from 'chai';
import { MIGRATIONS_DIR } from '../../src/db/orm.ts';
import { testDb } from '../hooks.ts';
import { REPO } from '../support/service-process.ts';
import { execFileChild } from '../support/child-processes.ts';

type Run = { code: number; stdout: string; stderr: string };

function cli(databaseUrl: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFileChild(
      process.execPath,
      ['src/cli/main.ts', ...args],
      { cwd: REPO, env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });
}

const ALL_MIGRATIONS = readdirSync(MIGRATIONS_DIR)
  .filter((f) => f.endsWith('.ts'))
  .map((f) => f.slice(0, -3))
  .sort();

describe('cli: migrations and missing databases', function () {
  this.timeout(60_000);
  const created: string[] = [];
  const urlOf = (name: string) => {
    const url = new URL(testDb().url);
    url.pathname = `/${name}`;
    return url.toString();
  };
  const exists = async (name: string) =>
    (await testDb().pool.query('select 1 from pg_database where datname = $1', [name])).rowCount === 1;
  const freshName = () => {
    const name = `lods_cli_${randomBytes(4).toString('hex')}`;
    created.push(name);
    return name;
  };
  after(async () => {
    for (const name of created) await testDb().pool.query(`drop database if exists ${name} with (force)`);
  });

  it('three `migrate` processes started together on an empty database all succeed and apply each migration once', async () => {
    const name = freshName();
    await testDb().pool.query(`create database ${name}`);
    const runs = await Promise.all([1, 2, 3].map(() => cli(urlOf(name), ['migrate', '--json'])));
    for (const run of runs) expect(run.code, run.stderr).to.equal(0);
    const applied = runs.flatMap((run) => (JSON.parse(run.stdout) as { applied: string[] }).applied);
    expect(applied.sort()).to.deep.equal(ALL_MIGRATIONS); // each once, by whichever process got the lock first
    const pg = await import('pg');
    const client = new pg.default.Client({ connectionString: urlOf(name) });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string }>('select name from mikro_orm_migrations order by name');
      expect(rows.map((r) => r.name)).to.deep.equal(ALL_MIGRATIONS);
    } finally {
      await client.end();
    }
  });

  it('three `migrate` processes started together on a database that does not exist: one creates it, all succeed', async () => {
    const name = freshName();
    const runs = await Promise.all([1, 2, 3].map(() => cli(urlOf(name), ['migrate', '--json'])));
    for (const run of runs) expect(run.code, run.stderr).to.equal(0);
    expect(await exists(name)).to.equal(true);
    const applied = runs.flatMap((run) => (JSON.parse(run.stdout) as { applied: string[] }).applied);
    expect(applied.sort()).to.deep.equal(ALL_MIGRATIONS);
  });

  it('another command on a database that does not exist exits 4 and creates nothing', async () => {
    const name = freshName();
    const run = await cli(urlOf(name), ['keys', 'list']);
    expect(run.code).to.equal(4);
    expect(run.stderr).to.include(`database "${name}" does not exist`);
    // What to do about it too (a check run before this one once replaced it with pg's bare words).
    expect(run.stderr).to.include('`npm run cli -- migrate` creates and migrates a new one');
    expect(await exists(name)).to.equal(false);
  });

  it('`migrate` waits for a fold of the search bitmaps under way, and applies nothing before it ends', async () => {
    // An older process's fold that went on past the migrations with its older function cleared the
    // marks they set for a rebuild: the folds' locks are taken before any migration runs.
    const name = freshName();
    await testDb().pool.query(`create database ${name}`);
    const pg = await import('pg');
    const fold = new pg.default.Client({ connectionString: urlOf(name) });
    await fold.connect();
    try {
      await fold.query('select pg_advisory_lock(20261223, 1)'); // a fold under way
      const migrating = cli(urlOf(name), ['migrate', '--json']);
      let waiting = false;
      for (let i = 0; i < 200 && !waiting; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const { rows } = await fold.query<{ n: number }>(
          `select count(*)::int as n from pg_locks l join pg_stat_activity a using (pid)
            where a.application_name = 'lods-migrate' and l.locktype = 'advisory'
              and l.classid = 20261223 and l.objid = 1 and not l.granted`,
        );
        waiting = rows[0]!.n === 1;
      }
      expect(waiting, 'migrate waits for the fold').to.equal(true);
      // The counts' folds go on meanwhile: their lock is taken only once the search fold's is.
      const counts = await fold.query<{ held: boolean }>('select pg_try_advisory_lock(20261222, 200) as held');
      expect(counts.rows[0]!.held, 'the counts can fold while migrate waits').to.equal(true);
      await fold.query('select pg_advisory_unlock(20261222, 200)');
      const { rows } = await fold.query<{ n: number }>('select count(*)::int as n from mikro_orm_migrations');
      expect(rows[0]!.n, 'nothing applied yet').to.equal(0);
      await fold.query('select pg_advisory_unlock(20261223, 1)');
      const run = await migrating;
      expect(run.code, run.stderr).to.equal(0);
      expect((JSON.parse(run.stdout) as { applied: string[] }).applied).to.deep.equal(ALL_MIGRATIONS);
    } finally {
      await fold.end();
    }
  });

  it('`migrate` behind an open transaction waits 2 s at a time, so that the sessions queued behind it go on, and applies once it ends', async () => {
    // A backup or a long read holding a table a migration alters: every statement on that table
    // queued behind the migration's wait as long as that transaction lasted (the older processes'
    // pools ran dry: 503 on every route). The last migration alters api_key (idempotently), which
    // every request's key look-up reads.
    const last = 'Migration20261231000000_edited_migrations';
    const name = freshName();
    await testDb().pool.query(`create database ${name}`);
    expect((await cli(urlOf(name), ['migrate', '--json'])).code).to.equal(0);
    const pg = await import('pg');
    const [holder, reader] = [0, 1].map(() => new pg.default.Client({ connectionString: urlOf(name) }));
    await holder!.connect();
    await reader!.connect();
    try {
      await holder!.query('delete from mikro_orm_migrations where name = $1', [last]);
      const { pid } = (await holder!.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!;
      await holder!.query('begin');
      await holder!.query('select count(*) from api_key');
      const migrating = cli(urlOf(name), ['migrate', '--json'], { LOG_LEVEL: 'warn' });
      for (let waiting = false; !waiting; await new Promise((resolve) => setTimeout(resolve, 50))) {
        const locks = await reader!.query(
          `select 1 from pg_locks l join pg_class c on c.oid = l.relation where c.relname = 'api_key' and not l.granted`,
        );
        waiting = (locks.rowCount ?? 0) > 0;
      }
      await reader!.query('set statement_timeout = 5000');
      let longest = 0;
      for (const until = Date.now() + 6000; Date.now() < until;) {
        const started = performance.now();
        await reader!.query('select count(*) from api_key').catch(() => {});
        longest = Math.max(longest, performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await holder!.query('commit');
      const run = await migrating;
      expect(run.code, run.stderr).to.equal(0);
      expect((JSON.parse(run.stdout) as { applied: string[] }).applied).to.deep.equal([last]);
      expect(longest, 'the longest key look-up behind the migration (ms)').to.be.below(3500);
      // It said why it waits, and whose transaction it was.
      expect(run.stderr).to.include('open transaction').and.include(`pid ${pid} `);
    } finally {
      await holder!.end();
      await reader!.end();
    }
  });

  it('`migrate` on a database a newer version migrated says it is ahead, and the service warns at start', async () => {
    const name = freshName();
    expect((await cli(urlOf(name), ['migrate', '--json'])).code).to.equal(0);
    const pg = await import('pg');
    const client = new pg.default.Client({ connectionString: urlOf(name) });
    await client.connect();
    try {
      await client.query(
        `insert into mikro_orm_migrations (name, executed_at) values ('Migration20991231000000_from_the_future', now())`,
      );
    } finally {
      await client.end();
    }
    const run = await cli(urlOf(name), ['migrate']);
    expect(run.code, run.stderr).to.equal(0);
    // It said "the database is up to date".
    expect(run.stdout.trim()).to.equal(
      'Nothing to apply. The database is ahead of this version: it has Migration20991231000000_from_the_future, which this version does not.',
    );
    const logged = await new Promise<Run>((resolve) =>
      execFileChild(
        process.execPath,
        ['src/cli/main.ts', 'receivers', 'list'],
        { cwd: REPO, env: { ...process.env, DATABASE_URL: urlOf(name), LOG_LEVEL: 'warn' } },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
      ),
    );
    expect(logged.code, logged.stderr).to.equal(0);
    expect(logged.stderr).to.include('the database has migrations this version does not have');
  });

  it('another command on a database that is not migrated exits 4 and leaves it untouched', async () => {
    const name = freshName();
    await testDb().pool.query(`create database ${name}`);
    const run = await cli(urlOf(name), ['receivers', 'list']);
    expect(run.code).to.equal(4);
    expect(run.stderr).to.include(`database "${name}" is not migrated (${ALL_MIGRATIONS.length} pending`);
    const pg = await import('pg');
    const client = new pg.default.Client({ connectionString: urlOf(name) });
    await client.connect();
    try {
      const { rows } = await client.query(
        "select count(*)::int as n from pg_tables where schemaname not in ('pg_catalog', 'information_schema')",
      );
      expect(rows[0].n).to.equal(0);
    } finally {
      await client.end();
    }
  });
});
