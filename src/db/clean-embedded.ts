// `npm run clean`: removes what the embedded PostgreSQL of this checkout left on the machine - its
// cluster (with the cluster's password and owner files) under DATA_DIR or, as root,
// /var/tmp/lods-embedded-postgres/cluster-<key>, the staged binaries binaries-<key> there, and the
// files the embedded default keeps in DATA_DIR (embedded-url, demo-key, secret-key). Nothing of
// another checkout (other keys) is touched. A cluster in use by a running service is not removed
// (the command refuses, removing nothing); one left running by a killed service is stopped first.
// Staged binaries that a running PostgreSQL executes (another cluster of this checkout, such as the
// test suite's throw-away ones) are kept: removing them would break it mid-run.
import { existsSync } from 'node:fs';
import { readdir, readlink, rm, rmdir } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { passwordFile } from './embedded-postgres.ts';
import { clusterState, ownerFile, stopLeftBehindCluster } from './left-behind-cluster.ts';
import { checkoutLeftovers } from './postgres-placement.ts';

const DATA_DIR_FILES = ['embedded-url', 'demo-key', 'secret-key'];
// With DATABASE_URL set (and no SECRET_ENCRYPTION_KEY) the generated secret-key seals that
// database's receiver secrets, which clean does not touch: removing it would leave them sealed
// under a key nobody holds, and the next start or migrate on that database refuses.
const KEPT_WITH_DATABASE_URL = 'secret-key';

/** The first process (pid) whose executable lies under `dir`, or null (Linux /proc; elsewhere null). */
async function runningFrom(dir: string): Promise<number | null> {
  const pids = await readdir('/proc').catch(() => [] as string[]);
  for (const pid of pids) {
    if (!/^\d+$/.test(pid)) continue;
    const exe = await readlink(`/proc/${pid}/exe`).catch(() => null);
    if (exe?.startsWith(`${dir}/`)) return Number(pid);
  }
  return null;
}

/** What `npm run clean` printed and its exit code (1: a cluster is in use, nothing removed). */
export async function cleanEmbedded(
  dataDir: string,
  say: (line: string) => void,
  options: { databaseUrl?: string } = {},
): Promise<number> {
  const { clusters, runtimeEntries } = await checkoutLeftovers(resolve(dataDir, 'pg'));
  for (const cluster of clusters) {
    const state = await clusterState(cluster);
    if (state.state === 'running') {
      say(
        `the embedded PostgreSQL in ${cluster} is in use by process ${state.owner}: stop the service (Ctrl-C) first; nothing was removed`,
      );
      return 1;
    }
  }
  for (const cluster of clusters) await stopLeftBehindCluster(cluster, say);
  const paths = [
    ...clusters.flatMap((c) => [c, passwordFile(c), ownerFile(c)]),
    ...runtimeEntries,
    ...DATA_DIR_FILES.filter((name) => !(options.databaseUrl && name === KEPT_WITH_DATABASE_URL)).map((name) =>
      resolve(dataDir, name),
    ),
  ];
  const keptKey = resolve(dataDir, KEPT_WITH_DATABASE_URL);
  if (options.databaseUrl && existsSync(keptKey))
    say(
      `kept ${keptKey}: with DATABASE_URL set it may seal that database's receiver secrets (move it into SECRET_ENCRYPTION_KEY, or remove it yourself once no database needs it)`,
    );
  let removed = 0;
  for (const path of paths) {
    if (!existsSync(path)) continue;
    const user = basename(path).startsWith('binaries-') ? await runningFrom(path) : null;
    if (user !== null) {
      say(`kept ${path}: a PostgreSQL (pid ${user}) runs from it`);
      continue;
    }
    await rm(path, { recursive: true, force: true });
    say(`removed ${path}`);
    removed += 1;
  }
  // The directories themselves only when nothing else is in them (the shared runtime directory stays:
  // another checkout may be placing things in it right now).
  for (const dir of [resolve(dataDir), dirname(clusters[1]!)]) {
    if (existsSync(dir) && (await readdir(dir)).length === 0)
      await rmdir(dir).then(
        () => say(`removed ${dir}`),
        () => {},
      );
  }
  if (removed === 0) say('nothing to remove: this checkout has no embedded PostgreSQL cluster or staged binaries');
  return 0;
}
