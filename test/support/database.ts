// A real PostgreSQL for the suite: a throw-away embedded cluster by default, or a fresh database on
// the server named by DATABASE_URL (created for this run, dropped after it).
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres.ts';

export type TestServer = { url: string; stop: () => Promise<void> };

export async function startTestPostgres(): Promise<TestServer> {
  const external = process.env.DATABASE_URL;
  if (external) return await createScratchDatabase(external);
  const dir = await mkdtemp(join(tmpdir(), 'lods-test-pg-'));
  await chmod(dir, 0o755); // PostgreSQL runs as the OS user postgres when we are root
  const embedded = await startEmbeddedPostgres({ dir: join(dir, 'pg'), database: 'lods_test', persistent: false });
  return {
    url: embedded.url,
    stop: async () => {
      await embedded.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function createScratchDatabase(serverUrl: string): Promise<TestServer> {
  const name = `lods_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    stop: async () => {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}
