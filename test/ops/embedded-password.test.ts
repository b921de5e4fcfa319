// The embedded PostgreSQL's superuser password (issue 18 item 6): random per cluster, kept only in a
// 0600 file beside the cluster, never the old shared constant; postgres listens on 127.0.0.1 only
// (no Unix socket); a cluster made with the old constant still starts and gets its own password;
// a throw-away test cluster leaves nothing behind.
import { existsSync, statSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { passwordFile, startEmbeddedPostgres } from '../../src/db/embedded-postgres.ts';
import { postgresIdentity, scratchParent } from '../../src/db/postgres-placement.ts';
import { startScratchPostgres } from '../support/scratch-postgres.ts';

const OLD_PASSWORD = 'lods-embedded';

/** The error code of logging in to `url` with `password` (null when it works). */
async function loginError(url: string, password: string): Promise<string | null> {
  const target = new URL(url);
  target.password = password;
  const client = new pg.Client({ connectionString: target.toString(), connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    return null;
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as Record<string, unknown>[];
  } finally {
    await client.end();
  }
}

describe('embedded PostgreSQL credentials and listening', function () {
  this.timeout(120_000);
  let parent: string;
  before(async () => {
    parent = await mkdtemp(join(await scratchParent(await postgresIdentity()), 'lods-pw-'));
    await chmod(parent, 0o755); // as root, PostgreSQL runs as the OS user postgres
  });
  after(async () => {
    await rm(parent, { recursive: true, force: true });
  });

  it('gives each cluster its own random password, kept only in a 0600 file beside it, and listens on 127.0.0.1 only', async () => {
    const clusters = [];
    try {
      for (const name of ['a', 'b'])
        clusters.push(
          await startEmbeddedPostgres({ dir: join(parent, name, 'pg'), database: 'lods', persistent: false }),
        );
      const passwords = clusters.map((c) => decodeURIComponent(new URL(c.url).password));
      for (const [i, cluster] of clusters.entries()) {
        const file = passwordFile(cluster.dir);
        expect(file).to.equal(`${cluster.dir}.password`);
        expect(statSync(file).mode & 0o777, file).to.equal(0o600);
        expect((await readFile(file, 'utf8')).trim()).to.equal(passwords[i]);
        expect(passwords[i]).to.have.length.of.at.least(32);
        expect(await loginError(cluster.url, OLD_PASSWORD)).to.equal('28P01');
        const [settings] = await query(
          cluster.url,
          `select current_setting('listen_addresses') as listen, current_setting('unix_socket_directories') as sockets`,
        );
        expect(settings).to.deep.equal({ listen: '127.0.0.1', sockets: '' });
      }
      expect(passwords[0]).to.not.equal(passwords[1]);
    } finally {
      for (const cluster of clusters) await cluster.stop();
    }
    for (const cluster of clusters)
      expect(existsSync(passwordFile(cluster.dir)), 'a throw-away cluster takes its password file with it').to.equal(
        false,
      );
  });

  it('still starts a cluster made with the old shared password, and gives it its own', async () => {
    const dir = join(parent, 'old', 'pg');
    const first = await startEmbeddedPostgres({ dir, database: 'lods', persistent: true });
    // What a cluster made before this change looks like: the constant password, no password file.
    await query(first.url, `alter role postgres password '${OLD_PASSWORD}'`);
    await first.stop();
    await rm(passwordFile(dir));

    const warnings: string[] = [];
    const again = await startEmbeddedPostgres({
      dir,
      database: 'lods',
      persistent: false,
      onWarning: (m) => warnings.push(m),
    });
    try {
      const password = decodeURIComponent(new URL(again.url).password);
      expect(password).to.not.equal(OLD_PASSWORD);
      expect((await readFile(passwordFile(dir), 'utf8')).trim()).to.equal(password);
      expect(await loginError(again.url, password)).to.equal(null);
      expect(await loginError(again.url, OLD_PASSWORD)).to.equal('28P01');
      expect(warnings).to.deep.equal([
        `the embedded PostgreSQL in ${dir} had the old shared password; it now has its own, kept in ${dir}.password`,
      ]);
    } finally {
      await again.stop();
    }
  });

  it('a throw-away test cluster leaves nothing behind once stopped', async () => {
    const scratch = await startScratchPostgres({ serverUrl: undefined, prefix: 'lods-pwcheck' });
    const dir = scratch.description.replace('embedded PostgreSQL in ', '');
    expect(existsSync(join(dir, 'pg.password'))).to.equal(true);
    await scratch.stop();
    expect(existsSync(dir)).to.equal(false);
  });
});
