// `npm run cli -- keys ...` as an operator runs it: a real process (Node 24) on the suite's
// database. Created keys work against the API at once, listings never show a key, revocation is
// immediate, and bad arguments exit non-zero with a message that says what is wrong.
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { getJson, refusedWithin, startTestApi } from '../support/api.ts';
import { execFileChild } from '../support/child-processes.ts';

const CLI = resolve(import.meta.dirname, '../../src/cli/main.ts');
type Run = { code: number; stdout: string; stderr: string };

// Each run is a Node process loading the ORM (about a second of CPU): at most a few at a time.
let running = 0;
const waiting: (() => void)[] = [];
async function cli(...args: string[]): Promise<Run> {
  if (running >= 3) await new Promise<void>((go) => waiting.push(go));
  running++;
  try {
    return await spawnCli(args);
  } finally {
    running--;
    waiting.shift()?.();
  }
}

function spawnCli(args: string[]): Promise<Run> {
  return new Promise((done) => {
    execFileChild(
      process.execPath,
      [CLI, ...args],
      {
        cwd: resolve(import.meta.dirname, '../..'),
        env: { ...process.env, DATABASE_URL: testDb().url, LOG_LEVEL: 'warn' },
        timeout: 60_000,
      },
      (error, stdout, stderr) =>
        done({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

function json<T>(run: Run): T {
  expect(run.code, run.stderr).to.equal(0);
  return JSON.parse(run.stdout) as T; // --json prints only JSON
}

const BAD: [string, string[], RegExp][] = [
  ['an unknown scope', ['keys', 'create', '--name', 'x', '--scope', 'catalog:admin'], /unknown scope catalog:admin/],
  ['no scope', ['keys', 'create', '--name', 'x'], /scope/],
  ['a missing --name', ['keys', 'create', '--scope', 'catalog:read'], /--name/],
  ['a blank --name', ['keys', 'create', '--name', ' ', '--scope', 'catalog:read'], /name/],
  ['a malformed id', ['keys', 'revoke', 'not-a-uuid'], /UUID/i],
  ['a missing id', ['keys', 'revoke'], /id/],
  ['an unknown id', ['keys', 'revoke', '00000000-0000-4000-8000-000000000000'], /not found/i],
  ['an unknown command', ['keys', 'rotate'], /unknown command/i],
];

type KeyJson = {
  id: string;
  name: string;
  scopes: string[];
  key?: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
};

describe('CLI keys', function () {
  this.timeout(120_000);
  let api: Api;
  let created: KeyJson & { key: string };
  const probe = (key: string) => getJson(api, '/v1/learning-opportunities?limit=1', key);

  // Independent runs start together; each test awaits its own.
  let human: Promise<Run>;
  let victim: Promise<Run>;
  const bad = new Map<string, Promise<Run>>();

  before(async () => {
    api = await startTestApi();
    const first = cli(
      'keys',
      'create',
      '--name',
      'cli consumer',
      '--scope',
      'catalog:read',
      '--scope',
      'graphql:read',
      '--json',
    );
    human = cli('keys', 'create', '--name', 'human', '--scope', 'catalog:read');
    victim = cli('keys', 'create', '--name', 'to revoke', '--scope', 'catalog:read', '--json');
    for (const [what, args] of BAD) bad.set(what, cli(...args, '--json'));
    created = json<KeyJson & { key: string }>(await first);
  });
  after(() => api.close());

  it('keys create --json prints {id, name, scopes, key, ...}, and the key works at once', async () => {
    expect(created).to.include({ name: 'cli consumer', revokedAt: null });
    expect(created.scopes).to.deep.equal(['catalog:read', 'graphql:read']);
    expect(created.id).to.match(/^[0-9a-f-]{36}$/);
    expect(created.key).to.match(/^lods_[A-Za-z0-9_-]{43}$/);
    expect((await probe(created.key)).status).to.equal(200);
    const { rows } = await testDb().pool.query('select * from api_key where id = $1', [created.id]);
    expect(JSON.stringify(rows)).not.to.include(created.key);
  });

  it('keys create without --json shows the key once, in words', async () => {
    const run = await human;
    expect(run.code, run.stderr).to.equal(0);
    const key = /lods_[A-Za-z0-9_-]{43}/.exec(run.stdout)?.[0];
    expect(key, run.stdout).to.be.a('string');
    expect(run.stdout.split(key!).length - 1).to.equal(1);
    expect((await probe(key!)).status).to.equal(200);
  });

  it('keys list --json is an array with the key’s details but never the key', async () => {
    const run = await cli('keys', 'list', '--json');
    const list = json<KeyJson[]>(run);
    expect(list).to.be.an('array');
    const mine = list.find((k) => k.id === created.id);
    expect(mine).to.include({ name: 'cli consumer', revokedAt: null });
    expect(mine).not.to.have.property('key');
    expect(run.stdout).not.to.include(created.key);
    expect(run.stdout).not.to.include(created.key.slice('lods_'.length));
  });

  it('keys revoke ID makes the key 401 within milliseconds', async () => {
    const target = json<KeyJson & { key: string }>(await victim);
    expect((await probe(target.key)).status).to.equal(200);
    const revoked = json<KeyJson>(await cli('keys', 'revoke', target.id, '--json'));
    expect(revoked.id).to.equal(target.id);
    expect(revoked.revokedAt).to.match(/^\d{4}-\d{2}-\d{2}T/);
    await refusedWithin(() => probe(target.key));
    const res = await probe(target.key);
    expect(res.status).to.equal(401);
    expect(res.headers.get('www-authenticate')).to.match(/^Bearer/);
    expect((await probe(created.key)).status, 'other keys keep working').to.equal(200);
  });

  for (const [what, args, message] of BAD) {
    it(`exits non-zero with a clear message for ${what}: ${args.join(' ')}`, async () => {
      const run = await bad.get(what)!;
      expect(run.code, run.stdout).to.not.equal(0);
      expect(run.stderr).to.match(message);
      expect(run.stdout).not.to.match(/lods_/);
      expect(run.stderr).not.to.match(/\n\s+at .+\(.+:\d+:\d+\)/); // no stack trace
    });
  }

  it('--version prints the version of the package it belongs to and its newest migration, and nothing else', async () => {
    const { version } = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../package.json'), 'utf8')) as {
      version: string;
    };
    const newest = readdirSync(resolve(import.meta.dirname, '../../migrations'))
      .sort()
      .at(-1)!;
    const run = await cli('--version');
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.equal(`${version} (migrations up to ${newest.slice('Migration'.length, -3)})\n`);
  });

  it('writes no key for rejected arguments', async () => {
    const { rows } = await testDb().pool.query<{ n: number }>(
      `select count(*)::int as n from api_key where name = 'x'`,
    );
    expect(rows[0]!.n).to.equal(0);
  });
});
