// An embedded PostgreSQL left running by `kill -9` of the service that started it (issue 18 item 11):
// the next start stops it and runs its own, and `npm run clean` removes this checkout's cluster and
// staged binaries (refusing while a service uses them). Real service processes throughout.
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { privateClone } from '../support/private-clone.ts';
import { type ServiceProcess, startService } from '../support/service-process.ts';
import { execFileChild } from '../support/child-processes.ts';

/** A data directory PostgreSQL can reach (mkdtemp makes 0700 ones). */
async function dataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'lods-leftover-'));
  await chmod(dir, 0o755);
  return dir;
}

const clusterDir = (service: ServiceProcess) =>
  String(service.logs().find((l) => l.msg === 'embedded PostgreSQL running')!.dir);
const postmasterPid = (dir: string) => Number(readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);

/** Running (a zombie waiting for its new parent to reap it has exited). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

function clean(cwd: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFileChild(
      'npm',
      ['run', '--silent', 'clean'],
      { cwd, env: { ...process.env, DATABASE_URL: '', ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });
}

async function killed(service: ServiceProcess): Promise<void> {
  service.child.kill('SIGKILL');
  await service.exited;
}

describe('an embedded PostgreSQL left behind by a killed service', function () {
  this.timeout(180_000);
  const cleanups: string[] = [];
  const services: ServiceProcess[] = [];
  after(async () => {
    for (const service of services) service.child.kill('SIGKILL');
    for (const dir of cleanups) await rm(dir, { recursive: true, force: true });
  });

  it('the next start stops the cluster a kill -9 left running, runs its own, and stops that one on Ctrl-C', async () => {
    const data = await dataDir();
    cleanups.push(data);
    const first = await startService({ env: { DATA_DIR: data } });
    services.push(first);
    const dir = clusterDir(first);
    const orphan = postmasterPid(dir);
    await killed(first);
    expect(running(orphan), 'PostgreSQL outlives a kill -9 of its starter').to.equal(true);

    const second = await startService({ env: { DATA_DIR: data } });
    services.push(second);
    expect(running(orphan), 'the left-behind PostgreSQL was stopped').to.equal(false);
    const warning = second.logs().find((l) => String(l.msg).startsWith('stopped the embedded PostgreSQL'));
    expect(warning?.msg, second.output()).to.equal(
      `stopped the embedded PostgreSQL (pid ${orphan}) in ${dir}: the process that started it had ended without stopping it`,
    );
    expect(warning?.level).to.equal(40);
    // Its own cluster (not the left-behind one used through embedded-url), stopped when it stops.
    expect(second.logs().some((l) => l.msg === 'embedded PostgreSQL running')).to.equal(true);
    const own = postmasterPid(dir);
    expect(own).to.not.equal(orphan);
    expect((await fetch(`${second.url}/readyz`)).status).to.equal(200);
    second.signalGroup('SIGINT');
    expect(await second.exited, second.output()).to.equal(0);
    expect(running(own)).to.equal(false);
  });

  it('npm run clean refuses while the service runs, then stops a left-behind cluster and removes it with its password and DATA_DIR files', async () => {
    // From a clone of its own: as root, clean also removes the checkout's staged binaries, which
    // other tests of this checkout start PostgreSQL from at the same time (CI saw `initdb ENOENT`).
    const clone = await privateClone();
    cleanups.push(clone);
    const cwd = join(clone, 'p');
    const data = await dataDir();
    cleanups.push(data);
    const service = await startService({ cwd, env: { DATA_DIR: data } });
    services.push(service);
    const dir = clusterDir(service);

    const refused = await clean(cwd, { DATA_DIR: data });
    expect(refused.code, refused.stdout + refused.stderr).to.equal(1);
    expect(refused.stdout).to.include(
      `the embedded PostgreSQL in ${dir} is in use by process ${service.child.pid}: stop the service (Ctrl-C) first; nothing was removed`,
    );
    expect(existsSync(join(dir, 'PG_VERSION'))).to.equal(true);

    const orphan = postmasterPid(dir);
    await killed(service);
    const cleaned = await clean(cwd, { DATA_DIR: data });
    expect(cleaned.code, cleaned.stdout + cleaned.stderr).to.equal(0);
    expect(running(orphan)).to.equal(false);
    expect(cleaned.stdout).to.include(`stopped the embedded PostgreSQL (pid ${orphan}) in ${dir}`);
    for (const path of [
      dir,
      `${dir}.password`,
      `${dir}.owner`,
      join(data, 'embedded-url'),
      join(data, 'demo-key'),
      join(data, 'secret-key'),
    ]) {
      expect(existsSync(path), path).to.equal(false);
    }
    expect(existsSync(data), 'the emptied DATA_DIR goes too').to.equal(false);
    expect((await clean(cwd, { DATA_DIR: data })).stdout).to.include('nothing to remove');
  });

  it('as root from a private clone: npm run clean removes its cluster and staged binaries under /var/tmp, and nothing else there', async function () {
    if (process.getuid?.() !== 0) this.skip(); // only root places clusters and binaries under /var/tmp
    const clone = await privateClone();
    cleanups.push(clone);
    const cwd = join(clone, 'p');
    const service = await startService({ cwd, env: {} });
    services.push(service);
    const started = service.logs().find((l) => l.msg === 'embedded PostgreSQL running')!;
    const [dir, binaries] = [String(started.dir), String(started.binaries)];
    const runtime = dirname(binaries);
    expect(runtime).to.equal('/var/tmp/lods-embedded-postgres');
    service.signalGroup('SIGINT');
    expect(await service.exited, service.output()).to.equal(0);
    // Another process's staging copy (`.partial-<pid>`) is renamed or removed by that process at any
    // moment (a parallel test starting its own embedded PostgreSQL): not an entry that must stay.
    const others = (await readdir(runtime)).filter(
      (name) => ![dirname(dir), binaries].includes(join(runtime, name)) && !name.includes('.partial-'),
    );

    const cleaned = await clean(cwd, {});
    expect(cleaned.code, cleaned.stdout + cleaned.stderr).to.equal(0);
    expect(cleaned.stdout)
      .to.include(`removed ${dirname(dir)}`)
      .and.include(`removed ${binaries}`);
    for (const path of [dirname(dir), binaries, join(cwd, '.data')]) expect(existsSync(path), path).to.equal(false);
    // Another checkout's (or a running test's) entries stay.
    if (existsSync(runtime)) for (const name of others) expect(existsSync(join(runtime, name)), name).to.equal(true);
  });
});
