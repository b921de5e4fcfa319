// A real primary and streaming replica for the read-replica tests, built from the machine's
// PostgreSQL binaries (initdb, pg_basebackup, pg_ctl), run as root as the embedded cluster's OS user
// (postgresIdentity: `postgres`, else `nobody`).
// Null when the binaries are missing (the tests then skip, saying why).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, chmod, chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { postgresIdentity } from '../../src/db/postgres-placement.ts';

export const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

export type Replicated = {
  primaryUrl: string;
  replicaUrl: string;
  stopReplica: () => Promise<void>;
  stop: () => Promise<void>;
};

const run = promisify(execFile);

/** Runs a PostgreSQL binary, as another OS user when we are root (PostgreSQL refuses to run as root). */
async function pg(binary: string, args: string[]): Promise<void> {
  const ids = await postgresIdentity();
  await run(join(PG_BIN, binary), args, ids ? { uid: ids.uid, gid: ids.gid } : {});
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export function replicationUnavailable(): string | null {
  for (const b of ['initdb', 'pg_basebackup', 'pg_ctl'])
    if (!existsSync(join(PG_BIN, b))) return `${join(PG_BIN, b)} is missing (set PG_BIN to a PostgreSQL bin directory)`;
  return null;
}

export async function startReplicated(): Promise<Replicated> {
  const dir = await mkdtemp(join(tmpdir(), 'lods-replication-'));
  const ids = await postgresIdentity();
  if (ids) await chown(dir, ids.uid, ids.gid);
  await chmod(dir, 0o700);
  const primary = join(dir, 'primary');
  const replica = join(dir, 'replica');
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const settings = (port: number) =>
    `\nport = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nfsync = off\n`;
  let started: string[] = [];
  const stopCluster = async (data: string) => {
    await pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {});
    started = started.filter((d) => d !== data);
  };
  try {
    await pg('initdb', ['-D', primary, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    await appendFile(
      join(primary, 'postgresql.conf'),
      `${settings(primaryPort)}wal_level = replica\nmax_wal_senders = 4\n`,
    );
    await pg('pg_ctl', ['-D', primary, '-l', join(dir, 'primary.log'), '-w', 'start']);
    started.push(primary);
    await pg('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primaryPort),
      '-U',
      'postgres',
      '-D',
      replica,
      '-R',
      '-X',
      'stream',
    ]);
    await appendFile(join(replica, 'postgresql.auto.conf'), `${settings(replicaPort)}hot_standby = on\n`);
    await pg('pg_ctl', ['-D', replica, '-l', join(dir, 'replica.log'), '-w', 'start']);
    started.push(replica);
  } catch (error) {
    for (const d of [...started]) await stopCluster(d);
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    primaryUrl: `postgresql://postgres@127.0.0.1:${primaryPort}/postgres`,
    replicaUrl: `postgresql://postgres@127.0.0.1:${replicaPort}/postgres`,
    stopReplica: () => stopCluster(replica),
    stop: async () => {
      for (const d of [...started]) await stopCluster(d);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
