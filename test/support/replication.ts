// A real primary and streaming replica for the read-replica tests, built from the machine's
// PostgreSQL binaries (initdb, pg_basebackup, pg_ctl), run as root as the embedded cluster's OS user
// (postgresIdentity: `postgres`, else `nobody`). pg_ctl starts each postgres in a session of its own:
// it is registered as a process group to end (child-processes.ts) until stop() stops it.
// Null when the binaries are missing (the tests then skip, saying why).
import { existsSync } from 'node:fs';
import { appendFile, chmod, chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../src/db/embedded-postgres.ts';
import { postgresIdentity } from '../../src/db/postgres-placement.ts';
import { adoptGroup, execFileChild } from './child-processes.ts';

export const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';

export type Replicated = {
  primaryUrl: string;
  replicaUrl: string;
  stopReplica: () => Promise<void>;
  stop: () => Promise<void>;
};

const run = promisify(execFileChild);

/** Runs a PostgreSQL binary, as another OS user when we are root (PostgreSQL refuses to run as root). */
async function pg(binary: string, args: string[]): Promise<void> {
  const ids = await postgresIdentity();
  await run(join(PG_BIN, binary), args, ids ? { uid: ids.uid, gid: ids.gid } : {});
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
  const settings = (port: number) =>
    `\nport = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nfsync = off\n`;
  let started: string[] = [];
  // Each running postgres's process group (postgres leads it), stopped as fast shutdown does (SIGINT).
  const forgetGroup = new Map<string, () => void>();
  const stopCluster = async (data: string) => {
    await pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {});
    started = started.filter((d) => d !== data);
    forgetGroup.get(data)?.();
    forgetGroup.delete(data);
  };
  // Starts the cluster in `data` on a free port (configured in `conf`, last setting wins), again on
  // another one if that port was taken before postgres bound it (as db/embedded-postgres.ts does).
  const startOnFreePort = async (data: string, conf: string, extra: string): Promise<number> => {
    const log = join(dir, `${data === primary ? 'primary' : 'replica'}.log`);
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      await appendFile(join(data, conf), `${settings(port)}${extra}`);
      try {
        await pg('pg_ctl', ['-D', data, '-l', log, '-w', 'start']);
        started.push(data);
        const pid = Number((await readFile(join(data, 'postmaster.pid'), 'utf8')).split('\n')[0]);
        forgetGroup.set(data, adoptGroup(pid, 'SIGINT'));
        return port;
      } catch (error) {
        const taken = (await readFile(log, 'utf8').catch(() => '')).includes('Address already in use');
        if (!taken || attempt === 5) throw error;
        await rm(log, { force: true });
      }
    }
  };
  let primaryPort: number;
  let replicaPort: number;
  try {
    await pg('initdb', ['-D', primary, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    primaryPort = await startOnFreePort(primary, 'postgresql.conf', 'wal_level = replica\nmax_wal_senders = 4\n');
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
    replicaPort = await startOnFreePort(replica, 'postgresql.auto.conf', 'hot_standby = on\n');
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
