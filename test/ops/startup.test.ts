// Starting and stopping the service as a newcomer and an operator do: `npm start` on the embedded
// default, Ctrl-C in the terminal (SIGINT to the whole foreground process group), production and
// DATABASE_URL starts, and a clone in a private directory started by root.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { testDb } from '../hooks.ts';
import { privateClone } from '../support/private-clone.ts';
import { REPO, type ServiceProcess, startService } from '../support/service-process.ts';

const RUNTIME_DIR = '/var/tmp/lods-embedded-postgres';

/** A data directory PostgreSQL can reach (mkdtemp makes 0700 ones). */
async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lods-startup-'));
  await chmod(dir, 0o755);
  return dir;
}

describe('starting and stopping the service', function () {
  this.timeout(90_000);
  const cleanups: string[] = [];
  after(async () => {
    for (const dir of cleanups) await rm(dir, { recursive: true, force: true });
  });

  /** Starts the service with ROLE=`role` on a port another server holds; what its failure said. */
  async function startOnBusyPort(role: string): Promise<{ port: number; failure: string }> {
    const data = await dataDir();
    cleanups.push(data);
    const taken = createServer();
    await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done));
    const { port } = taken.address() as AddressInfo;
    try {
      const failure = await startService({
        env: { DATA_DIR: data, DATABASE_URL: testDb().url, ROLE: role, HOST: '127.0.0.1', PORT: String(port) },
      }).then(
        () => expect.fail('the service started on a port in use'),
        (error: Error) => error.message,
      );
      return { port, failure };
    } finally {
      taken.close();
    }
  }

  it('Ctrl-C under `npm start` (SIGINT to the whole process group) drains, stops the embedded PostgreSQL and exits 0', async () => {
    const data = await dataDir();
    cleanups.push(data);
    const service = await startService({ viaNpm: true, env: { DATA_DIR: data, HOST: '0.0.0.0' } });
    const { port } = new URL(service.url);

    // The banner: the real bound address, the demo key, the psql line (the warning is checked below).
    expect(service.output()).to.include(`Listening on 0.0.0.0:${port} (every network interface`);
    expect(service.output()).to.match(/Demo API key \(all scopes; kept in .*demo-key\): lods_/);
    expect(service.output()).to.include(`psql "$(cat ${join(data, 'embedded-url')})"`);
    // The cluster lives under DATA_DIR, as docs/development.md says, when PostgreSQL can reach it.
    expect(service.logs().find((l) => l.msg === 'embedded PostgreSQL running')?.dir).to.equal(join(data, 'pg'));
    expect((await fetch(`${service.url}/healthz`)).status).to.equal(200);

    service.signalGroup('SIGINT');
    expect(await service.exited, service.output()).to.equal(0);
    expect(service.logs().at(-1)?.msg).to.equal('stopped');
    expect(service.output()).not.to.include('Unhandled');
    expect(service.logs().some((l) => String(l.msg).startsWith('listening on every network interface'))).to.equal(true);
    // PostgreSQL shut down cleanly (its lock file is gone) and the URL file with it.
    expect(existsSync(join(data, 'pg', 'postmaster.pid'))).to.equal(false);
    expect(existsSync(join(data, 'embedded-url'))).to.equal(false);
  });

  it('creates no demo key with NODE_ENV=production, even on the embedded default', async () => {
    const data = await dataDir();
    cleanups.push(data);
    const service = await startService({
      env: { DATA_DIR: data, NODE_ENV: 'production', SECRET_ENCRYPTION_KEY: Buffer.alloc(32, 5).toString('base64') },
    });
    service.child.kill('SIGTERM');
    expect(await service.exited, service.output()).to.equal(0);
    expect(service.output()).not.to.include('lods_');
    expect(existsSync(join(data, 'demo-key'))).to.equal(false);
  });

  it('on DATABASE_URL prints how to create a key instead of creating one', async () => {
    const data = await dataDir();
    cleanups.push(data);
    const keysBefore = (await testDb().pool.query('select count(*)::int as n from api_key')).rows[0].n;
    const service = await startService({ env: { DATA_DIR: data, DATABASE_URL: testDb().url, ROLE: 'api' } });
    service.child.kill('SIGTERM');
    expect(await service.exited, service.output()).to.equal(0);
    // The CLI must be pointed at the same database: without DATABASE_URL it would use its own.
    expect(service.output()).to.include(
      'DATABASE_URL=<the same URL> npm run cli -- keys create --name me --scope catalog:read',
    );
    expect(service.output()).not.to.include('Demo API key');
    expect(service.output()).not.to.include('psql');
    expect((await testDb().pool.query('select count(*)::int as n from api_key')).rows[0].n).to.equal(keysBefore);
  });

  it("a second `npm start` on the same DATA_DIR says it uses the first one's embedded PostgreSQL, and leaves it running when it stops", async () => {
    const data = await dataDir();
    cleanups.push(data);
    const first = await startService({ env: { DATA_DIR: data, ROLE: 'api' } });
    let second: ServiceProcess | null = null;
    try {
      second = await startService({ env: { DATA_DIR: data, ROLE: 'api' } });
      const warning = second
        .logs()
        .find(
          (l) =>
            l.msg ===
            'using the embedded PostgreSQL another process runs on DATA_DIR: it stops when that process stops, and so does this one',
        );
      expect(warning, second.output()).to.include({ level: 40, dataDir: data });
      second.child.kill('SIGTERM');
      expect(await second.exited, second.output()).to.equal(0);
      expect((await fetch(`${first.url}/readyz`)).status).to.equal(200);
      expect(first.logs().some((l) => String(l.msg).startsWith('using the embedded PostgreSQL'))).to.equal(false);
    } finally {
      // Both stopped whatever failed above (kill is a no-op on a process that has exited).
      second?.child.kill('SIGTERM');
      first.child.kill('SIGTERM');
      expect(await first.exited, first.output()).to.equal(0);
    }
  });

  it('a second `npm start` on the same DATA_DIR stops, exit 0, when the first one stops and takes its PostgreSQL with it', async () => {
    const data = await dataDir();
    cleanups.push(data);
    const first = await startService({ env: { DATA_DIR: data, ROLE: 'api' } });
    const second = await startService({ env: { DATA_DIR: data, ROLE: 'api' } }).catch(async (error: unknown) => {
      first.child.kill('SIGTERM');
      await first.exited;
      throw error;
    });
    try {
      first.child.kill('SIGTERM');
      expect(await first.exited, first.output()).to.equal(0);
      const exited = await Promise.race([second.exited, new Promise((r) => setTimeout(() => r('running'), 10_000))]);
      expect(exited, second.output()).to.equal(0);
      expect(second.logs().map((l) => l.msg)).to.include(
        'the embedded PostgreSQL of DATA_DIR stopped with its process: stopping',
      );
    } finally {
      second.child.kill('SIGTERM');
      first.child.kill('SIGTERM');
    }
  });

  it('says in one sentence that the port is taken (a second `npm start`), without a stack, and exits 1', async () => {
    const { port, failure } = await startOnBusyPort('api');
    expect(failure).to.include('exited with 1');
    expect(failure).to.include(
      `fatal: 127.0.0.1:${port} is already in use (another \`npm start\`?): stop that process or set PORT`,
    );
    expect(failure).not.to.match(/^\s+at /m);
  });

  it('refuses a HOST that is no address of this machine as a setting: one line naming HOST, exit 78, nothing started', () => {
    // The port is checked (and HOST with it) before the database is looked at: that one is never reached.
    for (const host of ['no-such-host.invalid', '192.0.2.1']) {
      const run = spawnSync(process.execPath, ['src/app/main.ts'], {
        cwd: REPO,
        env: { ...process.env, HOST: host, PORT: '3999', DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/never' },
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(run.status, run.stderr).to.equal(78);
      expect(run.stderr).to.match(
        new RegExp(`^Invalid configuration:\n  - HOST: "${host}" is not an address of this machine \\(E[A-Z_]+\\)`),
      );
      expect(run.stderr).not.to.match(/^\s+at /m);
    }
  });

  it('refuses a DATA_DIR that cannot be a directory as a setting: one line naming DATA_DIR, exit 78', async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'lods-data-file-')), 'a-file');
    await writeFile(file, 'not a directory');
    for (const dataDir of [file, join(file, 'below')]) {
      const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: '3999' };
      delete env.DATABASE_URL;
      const run = spawnSync(process.execPath, ['src/app/main.ts'], {
        cwd: REPO,
        env,
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(run.status, run.stderr).to.equal(78);
      expect(run.stderr).to.match(new RegExp(`^Invalid configuration:\n  - DATA_DIR: ${dataDir} cannot be used`));
      expect(run.stderr).not.to.match(/^\s+at /m);
    }
    await rm(dirname(file), { recursive: true, force: true });
  });

  it('takes --role alone: --help prints the usage and exits 0, any other argument is refused before anything starts', () => {
    const run = (...args: string[]) =>
      spawnSync(process.execPath, ['src/app/main.ts', ...args], {
        cwd: REPO,
        env: { ...process.env, DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/never' },
        encoding: 'utf8',
        timeout: 20_000,
      });
    const help = run('--help');
    expect([help.status, help.stdout]).to.satisfy(
      ([status, out]: [number, string]) => status === 0 && out.startsWith('Usage: npm start'),
    );
    for (const args of [['--bogus'], ['--port', '5'], ['--role=api', '--what']]) {
      const refused = run(...args);
      expect(refused.status, args.join(' ')).to.equal(78);
      expect(refused.stderr, args.join(' ')).to.include('unknown argument (npm start takes only --role all|api|worker');
      expect(refused.stderr, args.join(' ')).not.to.include('cannot use the database');
    }
  });

  it('says in one sentence that DATABASE_URL cannot be used, naming it and its host, without a stack or the password, and exits 1', async () => {
    const failure = await startService({
      env: { DATABASE_URL: 'postgresql://postgres:hunter2@127.0.0.1:1/lods', HOST: '127.0.0.1' },
    }).then(
      () => expect.fail('the service started without its database'),
      (error: Error) => error.message,
    );
    expect(failure).to.include('exited with 1');
    const fatal = failure.split('\n').filter((line) => line.startsWith('fatal:'));
    expect(fatal).to.have.length(1);
    expect(fatal[0]).to.match(
      /^fatal: cannot use the database of DATABASE_URL \(127\.0\.0\.1:1\): connect ECONNREFUSED/,
    );
    expect(failure).not.to.match(/^\s+at /m);
    expect(failure).not.to.include('hunter2');
  });

  it('a second `npm start` (every role) on a busy port fails on the port before it starts a worker, a queue or a database', async () => {
    const { port, failure } = await startOnBusyPort('all');
    expect(failure).to.include('exited with 1');
    const fatal = failure.split('\n').filter((line) => line.startsWith('fatal:'));
    expect(fatal).to.deep.equal([
      `fatal: 127.0.0.1:${port} is already in use (another \`npm start\`?): stop that process or set PORT`,
    ]);
    expect(failure).not.to.include('webhook delivery worker started');
    expect(failure).not.to.include('retention');
    expect(failure).not.to.match(/migrat|pg-boss|embedded PostgreSQL/i);
  });

  it('starts and stops as root from a clone in a private (0700) directory', async function () {
    if (process.getuid?.() !== 0) this.skip(); // only root runs PostgreSQL as another OS user
    const clone = await privateClone();
    cleanups.push(clone);
    const service = await startService({ cwd: join(clone, 'p'), env: {} });
    const running = service.logs().find((l) => l.msg === 'embedded PostgreSQL running')!;
    // The OS user postgres cannot enter the clone: cluster and binaries went under /var/tmp.
    for (const path of [String(running.dir), String(running.binaries)]) {
      expect(path.startsWith(`${RUNTIME_DIR}/`), path).to.equal(true);
      cleanups.push(path.endsWith('/pg') ? dirname(path) : path);
    }
    expect(service.output()).to.include('Demo API key');
    expect((await fetch(`${service.url}/healthz`)).status).to.equal(200);
    service.signalGroup('SIGINT');
    expect(await service.exited, service.output()).to.equal(0);
    expect(service.logs().at(-1)?.msg).to.equal('stopped');
  });
});
