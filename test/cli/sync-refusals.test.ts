// `npm run cli -- sync` refuses, with exit 2 and a message naming the option and the file, what it
// could only fail on or damage, before its first request (a first run walks the whole catalog before
// it saves): one file for --state and --out, a directory it cannot create its files in, a state or a
// copy it cannot read. And two runs on one state never run together: the second refuses at once.
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { type Run, runCli, startCli } from '../client/cli-process.ts';
import { type ScriptedServer, startScriptedServer } from '../client/fake-servers.ts';
import { until } from '../feed/feed-support.ts';
import { useTestApi } from '../support/api.ts';
import { createRecord, resetCatalog } from '../support/factories.ts';
import { startStallingProxy } from '../support/stalling-proxy.ts';
import { spawnChild } from '../support/child-processes.ts';

const NOBODY = 65534;

/** The test API behind a server that counts the requests it forwards: a refusal comes before the first. */
async function startCountingProxy(target: string): Promise<ScriptedServer> {
  return await startScriptedServer((_n, req, res) => {
    fetch(new URL(req.url ?? '/', target), { headers: { authorization: req.headers.authorization ?? '' } }).then(
      async (answer) =>
        res
          .writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' })
          .end(Buffer.from(await answer.arrayBuffer())),
      () => res.destroy(),
    );
  });
}

/** The pid of a process that has exited (nothing runs under it now). */
async function exitedPid(): Promise<number> {
  const child = spawnChild(process.execPath, ['-e', '']);
  await once(child, 'exit');
  return child.pid!;
}

/** The command run as another user (root may: it is how a test as root sees directory permissions). */
async function runCliAs(uid: number, args: string[], env: Record<string, string>): Promise<Run> {
  const child = spawnChild(process.execPath, ['src/cli/main.ts', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    uid,
    gid: uid,
  });
  let [stdout, stderr] = ['', ''];
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

describe('cli sync: refuses, before any request, local files it could only fail on or damage', function () {
  this.timeout(120_000);
  const served = useTestApi(['catalog:read']);
  let counting: ScriptedServer;
  let dir: string;

  /** Runs sync through the counting proxy: it must refuse with exit 2 and `message`, without a request. */
  async function expectRefusal(files: { out: string; state: string }, message: string): Promise<void> {
    const before = counting.requests.length;
    const run = await runCli(['sync', '--base-url', counting.url, '--state', files.state, '--out', files.out], {
      LODS_API_KEY: served.key,
    });
    expect(run.code, run.stderr).to.equal(2);
    expect(run.stderr).to.include(message);
    expect(counting.requests.length - before, 'requests sent').to.equal(0);
  }

  before(async () => {
    await resetCatalog();
    for (let i = 0; i < 3; i++) await createRecord(served.api.writes, { title: `Refusal ${i}` });
    counting = await startCountingProxy(served.api.url);
  });
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'lods-sync-refusals-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  after(() => counting.close());

  it('one file for --state and --out (one path, two spellings of it, a symlink): the copy is left as it was', async () => {
    const same = join(dir, 'same.json');
    await expectRefusal({ out: same, state: same }, `--state and --out are the same file (${same})`);
    await mkdir(join(dir, 'sub'));
    await expectRefusal(
      { out: join(dir, 'sub', '..', 'same.json'), state: same },
      `--state and --out are the same file (${same})`,
    );
    expect(existsSync(same)).to.equal(false);

    const copy = '{"id":"00000000-0000-4000-8000-000000000001","title":"kept"}\n';
    await writeFile(same, copy);
    await symlink(same, join(dir, 'link.jsonl'));
    await expectRefusal(
      { out: join(dir, 'link.jsonl'), state: same },
      `--state and --out are the same file (${same} and ${join(dir, 'link.jsonl')})`,
    );
    expect(await readFile(same, 'utf8')).to.equal(copy);
  });

  it('a directory that is missing, or a path under a regular file: names the option, the directory and why', async () => {
    const [missing, file] = [join(dir, 'missing'), join(dir, 'file')];
    await writeFile(file, '');
    await expectRefusal(
      { out: join(missing, 'c.jsonl'), state: join(dir, 's.json') },
      `--out ${join(missing, 'c.jsonl')}: cannot create a file in ${missing} (missing directory)`,
    );
    await expectRefusal(
      { out: join(dir, 'c.jsonl'), state: join(file, 's.json') },
      `--state ${join(file, 's.json')}: cannot create a file in ${file} (not a directory)`,
    );
    expect(await readdir(dir)).to.deep.equal(['file']);
  });

  it('a directory without write permission (as root: run as uid 65534, since root ignores permissions)', async function () {
    const asRoot = process.getuid?.() === 0;
    await chmod(dir, 0o755); // mkdtemp's 0700 would keep uid 65534 out of every directory inside
    const [readOnly, writable] = [join(dir, 'ro'), join(dir, 'rw')];
    await mkdir(readOnly, { mode: 0o555 });
    await mkdir(writable);
    await chmod(writable, 0o777);
    const run = (state: string, out: string) => {
      const args = ['sync', '--base-url', counting.url, '--state', state, '--out', out];
      return asRoot ? runCliAs(NOBODY, args, { LODS_API_KEY: served.key }) : runCli(args, { LODS_API_KEY: served.key });
    };
    const before = counting.requests.length;
    const outDenied = await run(join(writable, 's.json'), join(readOnly, 'c.jsonl')).catch(
      (error: NodeJS.ErrnoException) => error,
    );
    if (outDenied instanceof Error) {
      console.warn(
        `      skipped: cannot run the command as uid ${NOBODY} to check directory permissions (${outDenied.code})`,
      );
      this.skip();
    }
    expect(outDenied.code, outDenied.stderr).to.equal(2);
    expect(outDenied.stderr).to.include(
      `--out ${join(readOnly, 'c.jsonl')}: cannot create a file in ${readOnly} (permission denied)`,
    );
    const stateDenied = await run(join(readOnly, 's.json'), join(writable, 'c.jsonl'));
    expect(stateDenied.code, stateDenied.stderr).to.equal(2);
    expect(stateDenied.stderr).to.include(
      `--state ${join(readOnly, 's.json')}: cannot create a file in ${readOnly} (permission denied)`,
    );
    expect(counting.requests.length - before, 'requests sent').to.equal(0);
  });

  it('a --state that is not JSON, or JSON without a cursor, is refused naming it (not taken for a first run)', async () => {
    const [out, state] = [join(dir, 'c.jsonl'), join(dir, 's.json')];
    await writeFile(out, '{"id":"00000000-0000-4000-8000-000000000001","title":"kept"}\n');
    await writeFile(state, 'garbage{\n');
    await expectRefusal(
      { out, state },
      `--state ${state}: not JSON (Unexpected token 'g', "garbage{ " is not valid JSON); remove it to start over with a full walk`,
    );
    for (const shape of ['{"cursor": 5}', '[]']) {
      await writeFile(state, shape);
      await expectRefusal(
        { out, state },
        `--state ${state}: not a sync state (no "cursor" string); remove it to start over with a full walk`,
      );
    }
    await rm(out); // without its copy a state is not used, but a damaged one is still refused
    await expectRefusal({ out, state }, `--state ${state}: not a sync state`);
  });

  it('a --out that is not JSON lines of records names the line; a directory as --out is refused', async () => {
    const [out, state] = [join(dir, 'c.jsonl'), join(dir, 's.json')];
    for (const bad of ['hello', '{"id":"00000000-0000-4000-8000-0000000', '{"title":"no id"}']) {
      await writeFile(out, `{"id":"00000000-0000-4000-8000-000000000001","title":"kept"}\n\n${bad}\n`);
      await expectRefusal({ out, state }, `--out ${out}: line 3 is not a JSON record with an "id"`);
    }
    await mkdir(join(dir, 'a-directory'));
    await expectRefusal(
      { out: join(dir, 'a-directory'), state },
      `--out ${join(dir, 'a-directory')}: is a directory, not a file`,
    );
  });
});

describe('cli sync: one run per --state at a time (a lock file beside it)', function () {
  this.timeout(120_000);
  const served = useTestApi(['catalog:read']);
  let dir: string;

  before(async () => {
    await resetCatalog();
    await createRecord(served.api.writes, { title: 'Locked' });
  });
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'lods-sync-lock-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("a second run on the same --state refuses at once, naming the state and the first run's pid; the lock goes with the first (Ctrl-C)", async () => {
    const [out, state] = [join(dir, 'catalog.jsonl'), join(dir, 'state.json')];
    const proxy = await startStallingProxy(served.api.url, (path) => path === '/v1/learning-opportunities', 1);
    try {
      const first = startCli(['sync', '--base-url', proxy.url, '--out', out, '--state', state], {
        LODS_API_KEY: served.key,
      });
      await until(() => proxy.stalled(), 30_000); // the first run is in its walk, holding the lock
      expect(await readdir(dir)).to.deep.equal(['.state.json.lock']);
      expect(await readFile(join(dir, '.state.json.lock'), 'utf8')).to.equal(`${first.child.pid}\n`);

      const second = await runCli(
        ['sync', '--base-url', served.api.url, '--out', join(dir, 'other.jsonl'), '--state', state],
        { LODS_API_KEY: served.key },
      );
      expect(second.code, second.stderr).to.equal(2);
      expect(second.stderr).to.include(
        `--state ${state} is in use by another sync (pid ${first.child.pid}, lock file ${join(dir, '.state.json.lock')}: wait for it to end)`,
      );
      expect(existsSync(join(dir, 'other.jsonl'))).to.equal(false);

      first.child.kill('SIGINT');
      expect((await first.done).code).to.equal(130);
      expect(await readdir(dir), 'the lock removed by the interrupted run').to.deep.equal([]);
    } finally {
      await proxy.close();
    }
    const third = await runCli(['sync', '--base-url', served.api.url, '--out', out, '--state', state, '--json'], {
      LODS_API_KEY: served.key,
    });
    expect(third.code, third.stderr).to.equal(0);
    expect(JSON.parse(third.stdout)).to.deep.include({ mode: 'full', records: 1 });
  });

  it('a lock left by a process that no longer runs is taken over; the lock is removed at the end and on a failure', async () => {
    const [out, state, lock] = [join(dir, 'catalog.jsonl'), join(dir, 'state.json'), join(dir, '.state.json.lock')];
    await writeFile(lock, `${await exitedPid()}\n`);
    const run = await runCli(['sync', '--base-url', served.api.url, '--out', out, '--state', state, '--json'], {
      LODS_API_KEY: served.key,
    });
    expect(run.code, run.stderr).to.equal(0);
    expect(existsSync(lock), 'removed at the end').to.equal(false);

    const failed = await runCli(['sync', '--base-url', served.api.url, '--out', out, '--state', state], {
      LODS_API_KEY: 'lods_unknown',
    });
    expect(failed.code, failed.stderr).to.equal(1);
    expect(failed.stderr).to.include('the service answered 401');
    expect(existsSync(lock), 'removed after a failure').to.equal(false);
  });
});
