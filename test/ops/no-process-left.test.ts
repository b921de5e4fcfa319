// A test run that fails, or is killed, leaves no process behind: after a failed `npm test`, two API
// processes of the suite (`src/app/main.ts --role api`) were found running 11 minutes later, their
// parent gone. Tried as it happens: a mocha of its own (serial, as `npx mocha <file>` runs) runs a
// test file from a temp dir whose test starts an API process through test/support/role-process.ts
// and then fails an assertion, or is sent SIGTERM in the middle (as a mocha worker is when mocha
// gives up on it), or exits in the middle (no after hook runs). Afterwards no process of that run may be left: not the API process, and none
// whose command line or environment names the run's temp dir (every process the run started
// inherits it). The run uses a scratch database on the suite's server (DATABASE_URL), dropped after.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { testDb } from '../hooks.ts';
import { spawnChild } from '../support/child-processes.ts';

const REPO = resolve(import.meta.dirname, '../..');
const MOCHA = join(REPO, 'node_modules/mocha/bin/mocha.js');
const FIXTURE = join(import.meta.dirname, 'fixtures/api-process-left-running.ts');

type Pids = { test: number; api: number };
type Run = { dir: string; output: string; code: number | null; signal: NodeJS.Signals | null; pids: Pids | null };

/** Whether `pid` runs (a zombie, exited but not yet reaped, does not). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !['Z', 'X'].includes(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
  } catch {
    return false;
  }
}

/** The running processes whose command line or environment contains `marker`. */
function processesNaming(marker: string): { pid: number; command: string }[] {
  const found: { pid: number; command: string }[] = [];
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    const read = (file: string) => {
      try {
        return readFileSync(`/proc/${name}/${file}`, 'utf8');
      } catch {
        return ''; // gone meanwhile, or not ours to read
      }
    };
    const command = read('cmdline');
    if ((command.includes(marker) || read('environ').includes(marker)) && running(Number(name)))
      found.push({ pid: Number(name), command: command.replaceAll('\0', ' ').trim() });
  }
  return found;
}

/** What is left of the run in `dir` (the API process, anything naming `dir`), once it had `ms` to go. */
async function leftOf(run: Run, ms = 5000): Promise<string[]> {
  const left = () => [
    ...(run.pids && running(run.pids.api) ? [`the API process (pid ${run.pids.api})`] : []),
    ...processesNaming(run.dir).map((p) => `pid ${p.pid}: ${p.command}`),
  ];
  const deadline = Date.now() + ms;
  while (left().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return left();
}

/** Runs the fixture in a mocha of its own; with `sigterm`, sends SIGTERM to its test process mid-test. */
async function runFixture(scenario: 'fail' | 'sigterm' | 'exit'): Promise<Run> {
  const dir = await mkdtemp(join(tmpdir(), 'lods-no-process-left-'));
  // The file mocha is given lives in the temp dir, so every mocha process names it on its command line.
  const file = join(dir, 'leaves-an-api-process.test.mjs');
  await writeFile(file, `import ${JSON.stringify(pathToFileURL(FIXTURE).href)};\n`);
  const child = spawnChild(process.execPath, [MOCHA, file], {
    cwd: REPO,
    env: { ...process.env, DATABASE_URL: testDb().url, LODS_LEFT_DIR: dir, LODS_LEFT_SCENARIO: scenario },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((done) =>
    child.once('exit', (code, signal) => done([code, signal])),
  );
  const pidsFile = join(dir, 'pids.json');
  const readPids = async () => JSON.parse(await readFile(pidsFile, 'utf8')) as Pids;
  if (scenario === 'sigterm') {
    let ended = false;
    void exited.then(() => (ended = true));
    while (!existsSync(pidsFile) && !ended) await new Promise((r) => setTimeout(r, 100));
    if (!ended) process.kill((await readPids()).test, 'SIGTERM');
  }
  const [code, signal] = await exited;
  return { dir, output, code, signal, pids: existsSync(pidsFile) ? await readPids() : null };
}

/** Ends what the run left (on a failure of this test), drops its databases, removes its temp dir. */
async function cleanUp(run: Run | null): Promise<void> {
  if (!run) return;
  for (const { pid } of processesNaming(run.dir)) process.kill(pid, 'SIGKILL');
  if (run.pids && running(run.pids.api)) process.kill(run.pids.api, 'SIGKILL');
  // Named by the test process's pid (test/support/database.ts, scratch-postgres.ts); a killed run
  // never dropped them.
  if (run.pids) {
    const { rows } = await testDb().pool.query<{ datname: string }>(
      'select datname from pg_database where datname like $1',
      [`lods\\_test\\_${run.pids.test}\\_%`],
    );
    for (const { datname } of rows) await testDb().pool.query(`drop database if exists "${datname}" with (force)`);
  }
  await rm(run.dir, { recursive: true, force: true });
}

describe('a failed or killed test run leaves no process behind', function () {
  this.timeout(180_000);

  it('a test that started an API process through the support helper and then failed: the process is gone', async () => {
    let run: Run | null = null;
    try {
      run = await runFixture('fail');
      expect(run.pids, `the API process started and its pid was written:\n${run.output}`).to.not.equal(null);
      expect(run.output).to.include('1 failing').and.include('the deliberate failure');
      expect(run.code).to.equal(1);
      expect(await leftOf(run), 'left by the run').to.deep.equal([]);
    } finally {
      await cleanUp(run);
    }
  });

  it('a test process sent SIGTERM mid-test (an API process running): the process is gone, and so is the run', async () => {
    let run: Run | null = null;
    try {
      run = await runFixture('sigterm');
      expect(run.pids, `the API process started and its pid was written:\n${run.output}`).to.not.equal(null);
      expect(run.signal, `mocha ended by the signal:\n${run.output}`).to.equal('SIGTERM');
      expect(await leftOf(run), 'left by the run').to.deep.equal([]);
    } finally {
      await cleanUp(run);
    }
  });

  it('a test process that exits mid-test (an API process running, no after hook run): the process is gone', async () => {
    let run: Run | null = null;
    try {
      run = await runFixture('exit');
      expect(run.pids, `the API process started and its pid was written:\n${run.output}`).to.not.equal(null);
      expect(run.code, `mocha ended by process.exit(1):\n${run.output}`).to.equal(1);
      expect(await leftOf(run), 'left by the run').to.deep.equal([]);
    } finally {
      await cleanUp(run);
    }
  });
});
