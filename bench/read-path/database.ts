// The benchmark's own PostgreSQL: a throw-away embedded cluster in a temp dir, or a scratch database
// on the server named by DATABASE_URL (created for this run, dropped after it).
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/db/embedded-postgres.ts';

export type BenchPostgres = { url: string; description: string; stop: () => Promise<void> };

export async function startBenchPostgres(serverUrl: string | undefined): Promise<BenchPostgres> {
  if (serverUrl) return await createScratchDatabase(serverUrl);
  const dir = await mkdtemp(join(tmpdir(), 'lods-bench-pg-'));
  await chmod(dir, 0o755); // PostgreSQL runs as the OS user postgres when we are root
  const embedded = await startEmbeddedPostgres({ dir: join(dir, 'pg'), database: 'lods_bench', persistent: false });
  return {
    url: embedded.url,
    description: `embedded PostgreSQL in ${dir}`,
    stop: async () => {
      await embedded.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function createScratchDatabase(serverUrl: string): Promise<BenchPostgres> {
  const name = `lods_bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  await adminQuery(serverUrl, `create database ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    description: `scratch database ${name} on ${url.host}`,
    stop: () => adminQuery(serverUrl, `drop database if exists ${name} with (force)`),
  };
}

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
