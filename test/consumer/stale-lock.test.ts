// The lock a sync takes beside its state file: when it is left by a process that no longer runs, of
// several syncs started at the same moment one takes it over, and no other holds it at the same time. (Each one that found it stale
// removed it, the lock another had just taken with it: two syncs could both hold it.)
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { lockBeside } from '../../src/consumer/durable-files.ts';

const CONTENDER = resolve(import.meta.dirname, '../support/lock-contender.ts');
const DEAD_PID = 2 ** 22 + 7; // above the largest pid Linux gives (2^22): never a running process

function contend(path: string, at: number): Promise<string> {
  return new Promise((done, fail) =>
    execFile(process.execPath, [CONTENDER, path, String(at), '800'], (error, stdout) =>
      error ? fail(error) : done(stdout.trim()),
    ),
  );
}

describe('a stale lock beside a sync state file', function () {
  this.timeout(60_000);
  let dir: string;
  before(async () => (dir = await mkdtemp(join(tmpdir(), 'lods-stale-lock-'))));
  after(() => rm(dir, { recursive: true, force: true }));

  it('is held by one of six syncs started together at a time, in every one of three rounds', async () => {
    for (let round = 0; round < 3; round++) {
      const state = join(dir, `state-${round}.json`);
      await writeFile(join(dir, `.state-${round}.json.lock`), `${DEAD_PID}\n`);
      const at = Date.now() + 1200; // every process started and waiting by then
      const outcomes = await Promise.all(Array.from({ length: 6 }, () => contend(state, at)));
      // A contender started late on a loaded machine may take the lock after the first one let it go:
      // that is no race. Two holding it at once is.
      const held = outcomes
        .filter((o) => o.startsWith('held'))
        .map((o) => o.split(' ').slice(1).map(Number) as [number, number])
        .sort((a, b) => a[0] - b[0]);
      expect(held.length, `round ${round}: ${outcomes.join(', ')}`).to.be.at.least(1);
      for (let i = 1; i < held.length; i++)
        expect(held[i]![0], `round ${round}: held at once: ${outcomes.join(', ')}`).to.be.at.least(held[i - 1]![1]);
    }
  });

  // A process killed inside its takeover of a stale lock leaves the takeover lock: with its pid, or
  // with none when it died between creating the file and writing it (every later sync waited for ever).
  for (const [left, content, ageMs] of [
    ['no pid, written a minute ago', '', 60_000],
    ['the pid of a process that no longer runs', `${DEAD_PID}\n`, 0],
    ["this process's own pid (a container's earlier process)", `${process.pid}\n`, 0],
  ] as const)
    it(`is taken over when a takeover lock was left holding ${left}`, async () => {
      const name = `left-${ageMs}-${content.length}.json`;
      const state = join(dir, name);
      await writeFile(join(dir, `.${name}.lock`), `${DEAD_PID}\n`);
      const takeover = join(dir, `.${name}.lock.takeover`);
      await writeFile(takeover, content);
      const then = new Date(Date.now() - ageMs);
      await utimes(takeover, then, then);
      const release = await Promise.race([
        lockBeside(state),
        new Promise<never>((_, fail) => setTimeout(() => fail(new Error('still waiting after 3 s')), 3000)),
      ]);
      release();
      // Nothing of it left: the lock released, no takeover lock, nothing moved aside.
      expect((await readdir(dir)).filter((f) => f.includes(name))).to.deep.equal([]);
    });

  it('leaves a takeover lock holding no pid yet to its writer for a few seconds', async () => {
    await writeFile(join(dir, '.young.json.lock'), `${DEAD_PID}\n`);
    await writeFile(join(dir, '.young.json.lock.takeover'), '');
    const started = Date.now();
    const release = await lockBeside(join(dir, 'young.json'));
    release();
    expect(Date.now() - started).to.be.within(4500, 8000);
  });
});
