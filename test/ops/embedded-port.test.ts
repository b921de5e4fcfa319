// The embedded PostgreSQL's port: one the kernel had free a moment before, so another process can
// take it before postgres binds it (a busy suite's outgoing connections draw their local ports from
// the same range; a child mocha run's cluster failed that way once). Such a start is made again on
// another port; a start that finds every port it tries taken fails, saying so.
import { createServer, type Server } from 'node:net';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { freePort, startEmbeddedPostgres } from '../../src/db/embedded-postgres.ts';
import { postgresIdentity, scratchParent } from '../../src/db/postgres-placement.ts';

describe('embedded PostgreSQL on a port taken before it binds', function () {
  this.timeout(120_000);
  let parent: string;
  let taken: Server;
  let takenPort: number;
  before(async () => {
    parent = await mkdtemp(join(await scratchParent(await postgresIdentity()), 'lods-port-'));
    await chmod(parent, 0o755); // as root, PostgreSQL runs as the OS user postgres
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    takenPort = (taken.address() as { port: number }).port;
  });
  after(async () => {
    await new Promise((resolve) => taken.close(resolve));
    await rm(parent, { recursive: true, force: true });
  });

  it('fails with postgres own words when every port it is given is taken', async () => {
    const tried: number[] = [];
    const start = startEmbeddedPostgres({
      dir: join(parent, 'pg'),
      database: 'lods',
      persistent: true,
      choosePort: async () => (tried.push(takenPort), takenPort),
    });
    const error = await start.then(
      () => null,
      (e: Error) => e,
    );
    expect(error?.message).to.include('did not start').and.include('Address already in use');
    expect(tried.length, 'attempts before giving up').to.equal(5);
  });

  it('starts on another port when the first one it was given is taken meanwhile', async () => {
    const tried: number[] = [];
    const lines: string[] = [];
    const db = await startEmbeddedPostgres({
      dir: join(parent, 'pg'),
      database: 'lods',
      persistent: false,
      onLog: (line) => lines.push(line),
      choosePort: async () => {
        const port = tried.length === 0 ? takenPort : await freePort();
        tried.push(port);
        return port;
      },
    });
    try {
      expect(tried).to.have.length(2);
      expect(Number(new URL(db.url).port))
        .to.equal(tried[1])
        .and.not.equal(takenPort);
      expect(lines.join('\n')).to.include(`port ${takenPort} was taken`);
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        expect((await client.query('select 1 as one')).rows).to.deep.equal([{ one: 1 }]);
      } finally {
        await client.end();
      }
    } finally {
      await db.stop();
    }
  });
});
