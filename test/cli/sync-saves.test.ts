// `npm run cli -- sync` saves its copy and cursor every N changes, not after every feed page, and
// stays crash-safe: killed (SIGKILL) between saves, it resumes from the last save and ends with the
// same bytes as an uninterrupted run; Ctrl-C (SIGINT) or SIGTERM saves what was applied first. The
// feed here is 83 events read one per page, behind a proxy that can hold a page back, so that a kill
// or a signal lands while the command is provably in the middle of its run.
import { once } from 'node:events';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout } from 'node:timers/promises';
import { expect } from 'chai';
import type { SyncBatch } from '@lods/client';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { SyncCopy } from '../../src/consumer/sync-copy.ts';
import { runCli, startCli } from '../client/cli-process.ts';
import { fakeRecord } from '../client/fake-servers.ts';
import { collect, head, until } from '../feed/feed-support.ts';
import { useTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput, createRecord, resetCatalog } from '../support/factories.ts';
import { startStallingProxy } from '../support/stalling-proxy.ts';
import { spawnChild } from '../support/child-processes.ts';

const EVENTS = 83; // 10 rounds of 8 updates, an archival, a deletion, a publication again
const count = (text: string, pattern: RegExp) => text.match(new RegExp(pattern, 'g'))?.length ?? 0;
const SAVED = /saved \d+ records and the cursor/;

/** The pid of a process that has exited (nothing runs under it now). */
async function exitedPid(): Promise<number> {
  const child = spawnChild(process.execPath, ['-e', '']);
  await once(child, 'exit');
  return child.pid!;
}

describe('cli sync: saves every N changes, crash-safe', function () {
  this.timeout(120_000);
  const served = useTestApi(['catalog:read']);
  let dir: string;
  let base: string; // the copy and state after a first (full) run, before the 83 events
  let reference: { stdout: string; stderr: string; copy: string }; // an uninterrupted run from `base`

  /** A fresh directory holding the base copy and state; the command's arguments for it. */
  async function fromBase(
    name: string,
    baseUrl = served.api.url,
    saveEvery = 20,
  ): Promise<{ out: string; state: string; args: string[] }> {
    const at = join(dir, name);
    await cp(base, at, { recursive: true });
    const [out, state] = [join(at, 'catalog.jsonl'), join(at, 'state.json')];
    return {
      out,
      state,
      args: [
        'sync',
        '--base-url',
        baseUrl,
        '--out',
        out,
        '--state',
        state,
        '--limit',
        '1',
        '--save-every',
        String(saveEvery),
        '--save-interval',
        '3600',
        '--json',
      ],
    };
  }
  const withBaseUrl = (args: string[], baseUrl: string) =>
    args.map((a, i) => (args[i - 1] === '--base-url' ? baseUrl : a));

  before(async () => {
    await resetCatalog();
    dir = await mkdtemp(join(tmpdir(), 'lods-sync-saves-'));
    base = join(dir, 'base');
    await mkdir(base);

    const created = await head(served.api, served.key);
    const records = [];
    for (let i = 0; i < 8; i++) records.push(await createRecord(served.api.writes, { title: `Saved ${i}` }));
    await collect(served.api, served.key, created, 8);
    const first = await runCli(
      [
        'sync',
        '--base-url',
        served.api.url,
        '--out',
        join(base, 'catalog.jsonl'),
        '--state',
        join(base, 'state.json'),
        '--json',
      ],
      { LODS_API_KEY: served.key },
    );
    expect(first.code, first.stderr).to.equal(0);

    const changed = await head(served.api, served.key);
    for (let round = 0; round < 10; round++) {
      await served.api.writes.upsertMany(
        records.map((r, i) =>
          parseLearningOpportunityInput(buildLearningOpportunityInput({ id: r.id, title: `Round ${round} of ${i}` })),
        ),
      );
    }
    await served.api.writes.archive(records[0]!.id);
    await served.api.writes.delete(records[1]!.id);
    await served.api.writes.publish(records[0]!.id);
    await collect(served.api, served.key, changed, EVENTS);

    const { args, out } = await fromBase('reference');
    const run = await runCli(args, { LODS_API_KEY: served.key });
    expect(run.code, run.stderr).to.equal(0);
    reference = { stdout: run.stdout, stderr: run.stderr, copy: await readFile(out, 'utf8') };
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes the copy and the cursor once per 20 changes and at the end, not once per page', async () => {
    expect(JSON.parse(reference.stdout)).to.deep.include({ mode: 'incremental', events: EVENTS, records: 7, saves: 5 }); // after 20, 40, 60, 80, then the last 3
    expect(count(reference.stderr, /changes applied/), 'progress, one line per page').to.equal(EVENTS);
    expect(count(reference.stderr, SAVED), 'progress, one line per save').to.equal(5);
    // The copy is the public catalog.
    const res = await fetch(`${served.api.url}/v1/learning-opportunities?limit=100`, {
      headers: { authorization: `Bearer ${served.key}` },
    });
    const published = ((await res.json()) as { results: { id: string }[] }).results;
    const copy = reference.copy
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: string });
    expect(new Map(copy.map((r) => [r.id, r]))).to.deep.equal(new Map(published.map((r) => [r.id, r])));
  });

  it('killed (SIGKILL) between saves, a restart resumes from the last save and ends with the same copy', async () => {
    const proxy = await startStallingProxy(served.api.url, (path) => path === '/v1/events', 51);
    try {
      const { args, out, state } = await fromBase('killed', proxy.url);
      const running = startCli(args, { LODS_API_KEY: served.key });
      // Pages 1-50 applied, saves after 20 and 40 changes, page 51 asked for and held back.
      await until(() => proxy.stalled() && count(running.stderr(), SAVED) >= 2, 60_000);
      expect(count(running.stderr(), SAVED), 'saves before the kill').to.equal(2);
      running.child.kill('SIGKILL');
      expect((await running.done).code).to.equal(null);
      expect(await readFile(state, 'utf8')).not.to.equal(await readFile(join(base, 'state.json'), 'utf8'));

      // A kill in the middle of a save leaves its temporary file; one of a process still running is its own.
      const [killedMidSave, liveRun] = [
        join(dirname(out), `.catalog.jsonl.${await exitedPid()}.tmp`),
        join(dirname(out), `.state.json.${process.pid}.tmp`),
      ];
      await writeFile(killedMidSave, '{"id":"half a line');
      await writeFile(liveRun, '{}');

      const restarted = await runCli(withBaseUrl(args, served.api.url), { LODS_API_KEY: served.key });
      expect(restarted.code, restarted.stderr).to.equal(0);
      // From the cursor saved after 40 changes: the 10 applied after it were lost with the process.
      expect(JSON.parse(restarted.stdout)).to.deep.include({ mode: 'incremental', events: EVENTS - 40, records: 7 });
      expect(await readFile(out, 'utf8')).to.equal(reference.copy);
      expect(
        [existsSync(killedMidSave), existsSync(liveRun)],
        'leftover of a dead process removed, a live one kept',
      ).to.deep.equal([false, true]);
    } finally {
      await proxy.close();
    }
  });

  for (const [signal, exitCode] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${signal}${signal === 'SIGINT' ? ' (Ctrl-C)' : ''} saves what was applied, then exits ${exitCode}; the next run continues from there`, async () => {
      const proxy = await startStallingProxy(served.api.url, (path) => path === '/v1/events', 51);
      try {
        const { args, out, state } = await fromBase(signal, proxy.url, 1000);
        const running = startCli(args, { LODS_API_KEY: served.key });
        await until(() => proxy.stalled(), 60_000);
        expect(count(running.stderr(), SAVED), 'nothing saved yet').to.equal(0);
        const signalled = Date.now();
        running.child.kill(signal);
        const stopped = await running.done;
        expect(Date.now() - signalled, 'the held request is abandoned, not waited for').to.be.below(5000);
        expect(stopped.code, stopped.stderr).to.equal(exitCode);
        expect(stopped.stdout).to.equal('');
        expect(stopped.stderr).to.include(
          `sync interrupted by ${signal}; ${out} holds 8 records, saved with their cursor: the next run continues from there`,
        );
        expect(count(stopped.stderr, SAVED)).to.equal(1);

        const next = await runCli(withBaseUrl(args, served.api.url), { LODS_API_KEY: served.key });
        expect(next.code, next.stderr).to.equal(0);
        expect(JSON.parse(next.stdout)).to.deep.include({ mode: 'incremental', events: EVENTS - 50, records: 7 }); // the 50 applied before the signal were kept
        expect(await readFile(out, 'utf8')).to.equal(reference.copy);
        expect(JSON.parse(await readFile(state, 'utf8'))).to.include({ records: 7 });
      } finally {
        await proxy.close();
      }
    });
  }

  it('Ctrl-C during the walk of a first run saves nothing and says that the next run walks again', async () => {
    const proxy = await startStallingProxy(served.api.url, (path) => path === '/v1/learning-opportunities', 1);
    try {
      const at = join(dir, 'first-run');
      const [out, state] = [join(at, 'catalog.jsonl'), join(at, 'state.json')];
      await mkdir(at);
      const running = startCli(['sync', '--base-url', proxy.url, '--out', out, '--state', state], {
        LODS_API_KEY: served.key,
      });
      await until(() => proxy.stalled(), 60_000);
      running.child.kill('SIGINT');
      const stopped = await running.done;
      expect(stopped.code, stopped.stderr).to.equal(130);
      expect(stopped.stderr).to.include(
        'sync interrupted by SIGINT; stopped before the walk ended, nothing saved: the next run walks again',
      );
      expect(await readdir(at)).to.deep.equal([]);
    } finally {
      await proxy.close();
    }
  });

  it('a copy saved ahead of its cursor (a crash between the two renames) ends the same after the restart', async () => {
    const { args, out } = await fromBase('torn');
    await cp(join(dir, 'reference', 'catalog.jsonl'), out); // the new copy, the old cursor
    const run = await runCli(args, { LODS_API_KEY: served.key });
    expect(run.code, run.stderr).to.equal(0);
    expect(JSON.parse(run.stdout)).to.deep.include({ events: EVENTS, records: 7 }); // every event re-applied
    expect(await readFile(out, 'utf8')).to.equal(reference.copy);
  });
});

describe('sync copy: the save interval', () => {
  it('a page arriving --save-interval after the last save saves what came before it, with its cursor', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lods-sync-interval-'));
    try {
      const files = { out: join(dir, 'catalog.jsonl'), state: join(dir, 'state.json') };
      const copy = new SyncCopy({
        records: new Map(),
        files,
        policy: { everyChanges: 1000, intervalMs: 300 },
        onSave: () => {},
      });
      const upsert = (id: string): SyncBatch['changes'][number] => ({
        op: 'upsert',
        id,
        record: fakeRecord(id, '2026-05-01T10:00:00.000Z'),
      });
      const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
      await copy.apply({ reset: true, changes: [upsert(a)], cursor: 'after-a' });
      await copy.apply({ reset: false, changes: [upsert(b)], cursor: 'after-b' });
      expect(existsSync(files.state), 'too early to save').to.equal(false);
      await setTimeout(400);
      await copy.apply({ reset: false, changes: [upsert(c)], cursor: 'after-c' });
      expect(JSON.parse(await readFile(files.state, 'utf8'))).to.include({ cursor: 'after-b', records: 2 });
      expect(
        (await readFile(files.out, 'utf8'))
          .trimEnd()
          .split('\n')
          .map((line) => (JSON.parse(line) as { id: string }).id),
      ).to.deep.equal([a, b]);
      expect(copy.saves).to.equal(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a walk again that finds no record empties the copy on disk with its cursor; a page of no change saves the cursor alone', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lods-sync-empty-'));
    try {
      const files = { out: join(dir, 'catalog.jsonl'), state: join(dir, 'state.json') };
      const [a, b] = [randomUUID(), randomUUID()];
      const held = new Map([a, b].map((id) => [id, JSON.stringify(fakeRecord(id, '2026-05-01T10:00:00.000Z'))]));
      await writeFile(files.out, `${[...held.values()].join('\n')}\n`);
      const copy = new SyncCopy({
        records: held,
        files,
        policy: { everyChanges: 1000, intervalMs: 60_000 },
        onSave: () => {},
      });
      // A page that changes nothing here: the cursor alone is written.
      await copy.apply({ reset: false, changes: [], cursor: 'quiet' });
      await copy.save();
      expect(JSON.parse(await readFile(files.state, 'utf8'))).to.include({ cursor: 'quiet', records: 2 });
      // The cursor expired (or the state was removed) and the walk again found nothing: the copy is
      // empty now, and so is the file beside the new cursor (it kept both records beside it).
      await copy.apply({ reset: true, changes: [], cursor: 'walked' });
      await copy.save();
      expect(JSON.parse(await readFile(files.state, 'utf8'))).to.include({ cursor: 'walked', records: 0 });
      expect(await readFile(files.out, 'utf8')).to.equal('');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
