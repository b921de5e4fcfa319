// `npm run cli -- walk` end to end: a child process against the real test API.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { CliError } from '../../src/cli/run.ts';
import { parseWalkArguments, type WalkOpts } from '../../src/cli/walk.ts';
import { createTestKey, useTestApi } from '../support/api.ts';
import { createRecord, resetCatalog } from '../support/factories.ts';
import { runCli } from './cli-process.ts';
import { fakeRecord, inListOrder, startFakeCatalog } from './fake-servers.ts';

// No key from the environment unless a test passes one.
const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { LODS_API_KEY: '', ...env });

describe('cli walk', () => {
  const served = useTestApi(['catalog:read']);
  let dir: string;
  let published: (Record<string, unknown> & { id: string; updatedAt: string })[];

  before(async () => {
    await resetCatalog();
    published = [];
    for (let i = 0; i < 5; i++) published.push(await createRecord(served.api.writes, { title: `CLI walk ${i}` }));
    dir = await mkdtemp(join(tmpdir(), 'lods-walk-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes every published record once as JSON lines and prints one JSON summary (key from LODS_API_KEY)', async function () {
    this.timeout(30_000);
    const out = join(dir, 'catalog.jsonl');
    const run = await cli(['walk', '--base-url', served.api.url, '--out', out, '--limit', '2', '--json'], {
      LODS_API_KEY: served.key,
    });
    expect(run.code, run.stderr).to.equal(0);
    expect(JSON.parse(run.stdout)).to.deep.equal({
      count: 5,
      highestUpdatedAt: published
        .map((r) => r.updatedAt)
        .sort()
        .at(-1),
      pages: 3,
      out,
      received: 5,
      duplicates: 0,
    });
    const lines = (await readFile(out, 'utf8')).trimEnd().split('\n');
    expect(lines).to.have.length(5);
    const byId = new Map(lines.map((line) => JSON.parse(line) as { id: string }).map((r) => [r.id, r]));
    expect(byId.size).to.equal(5);
    for (const record of published) expect(byId.get(record.id)).to.deep.equal(record);
    expect(run.stderr).to.match(/3 pages, 5 records received/);
    expect(await readdir(dir)).to.deep.equal(['catalog.jsonl']); // no partial file left behind
  });

  it('keeps exactly one line per id when records shift between pages during the walk (latest copy)', async function () {
    this.timeout(30_000);
    // Page 1 from an up-to-date replica, page 2 from one that lags: B is seen twice, its newer copy first.
    const at = (minute: number) => `2026-05-01T10:${String(minute).padStart(2, '0')}:00.000Z`;
    const [a, c, b, d] = [8, 7, 6, 5].map((m) => fakeRecord(randomUUID(), at(m)));
    const bNew = { ...b!, title: 'B new', updatedAt: at(9) };
    const fresh = inListOrder([bNew, a!, c!, d!]);
    const lagging = inListOrder([a!, c!, b!, d!, fakeRecord(randomUUID(), at(1))]);
    const fake = await startFakeCatalog((n) => (n === 0 ? fresh : lagging));
    try {
      const out = join(dir, 'shifted.jsonl');
      const run = await cli(['walk', '--base-url', fake.url, '--out', out, '--limit', '2', '--json'], {
        LODS_API_KEY: 'any',
      });
      expect(run.code, run.stderr).to.equal(0);
      // page 1 (fresh): B new, A; page 2 (lagging): B old, D; page 3 (lagging): E. C is missed (best effort).
      expect(JSON.parse(run.stdout)).to.include({
        count: 4,
        received: 5,
        duplicates: 1,
        pages: 3,
        highestUpdatedAt: at(9),
      });
      const records = (await readFile(out, 'utf8'))
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as { id: string; title: string });
      expect(records).to.have.length(4);
      expect(new Set(records.map((r) => r.id)).size).to.equal(4);
      expect(records.find((r) => r.id === b!.id)?.title).to.equal('B new');
      expect((await readdir(dir)).filter((f) => !f.endsWith('.jsonl'))).to.deep.equal([]); // no partial files left
    } finally {
      await fake.close();
    }
  });

  it('keeps one whole line per record when titles hold U+2028 or U+2029, duplicates or not', async function () {
    this.timeout(30_000);
    // The same shift as above: the copy without duplicates is made by reading the partial file back
    // line by line, where these two characters ended lines (a record split in three, and the wrong
    // lines kept after it).
    const at = (minute: number) => `2026-05-01T10:${String(minute).padStart(2, '0')}:00.000Z`;
    const [a, c, b, d] = [8, 7, 6, 5].map((m) => fakeRecord(randomUUID(), at(m), `Line\u2028${m}\u2029end`));
    const bNew = { ...b!, title: 'B\u2028new', updatedAt: at(9) };
    const fresh = inListOrder([bNew, a!, c!, d!]);
    const lagging = inListOrder([a!, c!, b!, d!]);
    const fake = await startFakeCatalog((n) => (n === 0 ? fresh : lagging));
    try {
      const out = join(dir, 'separators.jsonl');
      const run = await cli(['walk', '--base-url', fake.url, '--out', out, '--limit', '2', '--json'], {
        LODS_API_KEY: 'any',
      });
      expect(run.code, run.stderr).to.equal(0);
      expect(JSON.parse(run.stdout)).to.include({ count: 3, duplicates: 1 });
      const text = await readFile(out, 'utf8');
      expect(text, 'escaped in the file').not.to.match(/[\u2028\u2029]/);
      const records = text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as { id: string });
      expect(records).to.deep.equal([bNew, a!, d!]);
    } finally {
      await fake.close();
    }
  });

  it('exits non-zero with the problem detail when the key is refused, and writes no file', async function () {
    this.timeout(30_000);
    const out = join(dir, 'refused.jsonl');
    const [unknown, noScope] = await Promise.all([
      cli(['walk', '--base-url', served.api.url, '--key', 'lods_not_a_real_key', '--out', out]),
      cli(['walk', '--base-url', served.api.url, '--out', out], {
        LODS_API_KEY: await createTestKey(['graphql:read']),
      }),
    ]);
    expect(noScope.code).to.equal(1);
    expect(noScope.stderr).to.contain('answered 403').and.to.contain('lacks the "catalog:read" scope');
    const run = unknown;
    expect(run.code).to.equal(1);
    expect(run.stderr)
      .to.contain('answered 401 after 1 attempt')
      .and.to.contain('The API key is unknown or has been revoked');
    expect(run.stdout).to.equal('');
    expect(existsSync(out)).to.equal(false);
  });

  it('exits 2 with a clear message on bad arguments', async function () {
    this.timeout(30_000);
    const out = join(dir, 'never.jsonl');
    const run = await cli(['walk', '--base-url', served.api.url, '--out', out, '--limit', '101'], {
      LODS_API_KEY: served.key,
    });
    expect(run.code).to.equal(2);
    expect(run.stderr).to.contain('--limit must be a positive integer (at most 100)');
    expect(existsSync(out)).to.equal(false);

    // The other checks in-process (a child process per case costs a second each on a busy machine).
    const ok = { baseUrl: served.api.url, key: served.key, out, limit: '100' };
    const failures: [WalkOpts, string][] = [
      [{ ...ok, out: undefined }, '--out is required'],
      [{ ...ok, baseUrl: 'not a url' }, '--base-url is not a URL'],
      [{ ...ok, baseUrl: 'ftp://example.org' }, 'must be an http or https URL'],
      [{ ...ok, baseUrl: undefined }, '--base-url is required'],
      [{ ...ok, key: undefined }, 'LODS_API_KEY'],
      [{ ...ok, limit: '0' }, '--limit must be a positive integer (at most 100)'],
      [{ ...ok, limit: '1.5' }, '--limit must be a positive integer (at most 100)'],
    ];
    for (const [opts, message] of failures) {
      expect(() => parseWalkArguments(opts), message)
        .to.throw(CliError, message)
        .with.property('exitCode', 2);
    }
    expect(parseWalkArguments({ ...ok, limit: '1' })).to.include({ limit: 1, out });
  });

  it('exits 2 naming --out when no file can be created where it points, before any request', async function () {
    this.timeout(30_000);
    const underAFile = join(dir, 'refused.txt');
    await writeFile(underAFile, 'a file, not a directory');
    for (const [out, why] of [
      [join(dir, 'missing', 'c.jsonl'), 'missing directory'],
      [join(underAFile, 'c.jsonl'), 'not a directory'],
    ] as const) {
      // A port nothing listens on: a request would fail with exit 1, not 2.
      const run = await cli(['walk', '--base-url', 'http://127.0.0.1:9', '--out', out], { LODS_API_KEY: served.key });
      expect(run.code, run.stderr).to.equal(2);
      expect(run.stderr).to.contain(`--out ${out}: cannot create a file in`).and.to.contain(why);
    }
  });

  it('exits 2 naming --out when it is not a regular file (a pipe here), and leaves it as it was', async function () {
    // Its save renames a file over --out: `walk --out /dev/null` as root replaced the system's /dev/null.
    this.timeout(30_000);
    const pipe = join(dir, 'a-pipe');
    execFileSync('mkfifo', [pipe]);
    const run = await cli(['walk', '--base-url', 'http://127.0.0.1:9', '--out', pipe], { LODS_API_KEY: served.key });
    expect(run.code, run.stderr).to.equal(2);
    expect(run.stderr).to.contain(`--out ${pipe}: not a regular file`);
    expect((await lstat(pipe)).isFIFO(), 'still a pipe').to.equal(true);
  });
});
