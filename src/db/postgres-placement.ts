// Where the embedded PostgreSQL's binaries and cluster live. PostgreSQL refuses to run as root, so a
// root process runs it as an existing unprivileged OS user (`postgres`, else `nobody`; none is ever
// created: starting or testing changes no account on the machine), who must be able to reach both. A checkout in a
// private directory (`mktemp -d`, /root/...) is out of that user's reach: then the binaries are
// staged (hard links, or a copy across file systems) and the cluster is placed under a root-owned,
// world-traversable directory in /var/tmp, keyed by the original path and reused on later runs.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, copyFile, link, lstat, mkdir, readdir, readlink, rename, rm, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { OperatorError } from '../kernel/errors.ts';

/** The embedded PostgreSQL cannot run here; the message says why and what to do. */
export class EmbeddedPostgresError extends OperatorError {}

/** The OS user PostgreSQL runs as: null when it is ourselves (not root). */
export type PostgresIdentity = { name: string; uid: number; gid: number } | null;

/** The OS users a root process runs PostgreSQL as, the first that exists; none is created. */
export const OS_USERS = ['postgres', 'nobody'] as const;
const USE_DATABASE_URL = 'set DATABASE_URL to a PostgreSQL server instead';

let identity: Promise<PostgresIdentity> | undefined;

/** As root: the first of OS_USERS that exists (see rootIdentity); null when we are not root. */
export function postgresIdentity(): Promise<PostgresIdentity> {
  identity ??= Promise.resolve().then(() => (process.getuid?.() === 0 ? rootIdentity(lookUpUser) : null));
  return identity;
}

/** The first of OS_USERS that `lookUp` finds; without one, an error that says what to do. */
export function rootIdentity(lookUp: (name: string) => PostgresIdentity): NonNullable<PostgresIdentity> {
  for (const name of OS_USERS) {
    const found = lookUp(name);
    if (found) return found;
  }
  throw new EmbeddedPostgresError(
    `The embedded PostgreSQL cannot run as root and none of the OS users ${OS_USERS.map((n) => `"${n}"`).join(', ')} exists to run it as: create one, or ${USE_DATABASE_URL}.`,
  );
}

/** The directory holding bin/, lib/ and share/ of the bundled PostgreSQL, reachable by `ids`. */
export async function reachableBinaries(ids: PostgresIdentity): Promise<string> {
  const packaged = packagedNativeDir();
  if (!ids || canReach(ids, join(packaged, 'bin', 'initdb'))) return packaged;
  const staged = join(await runtimeDir(ids), `binaries-${keyOf(packaged)}`);
  if (existsSync(join(staged, 'bin', 'postgres'))) return staged;
  // Staged beside the target, then renamed: a concurrent first run never sees half a copy.
  const partial = `${staged}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  try {
    await copyTree(packaged, partial);
    await rename(partial, staged).catch((error: unknown) => {
      if (!existsSync(join(staged, 'bin', 'postgres'))) throw error; // else another process won the race
    });
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
  return staged;
}

/**
 * The cluster directory to use for `preferred`: itself when PostgreSQL can reach its parent, else
 * `cluster-<key>/pg` under the runtime directory (same `preferred`, same place on every run).
 */
export async function placeCluster(ids: PostgresIdentity, preferred: string): Promise<string> {
  const wanted = resolve(preferred);
  await mkdir(dirname(wanted), { recursive: true });
  if (!ids || canReach(ids, dirname(wanted))) return wanted;
  const home = join(await runtimeDir(ids), `cluster-${keyOf(wanted)}`);
  await mkdir(home, { recursive: true });
  await chmod(home, 0o755); // whatever the umask: PostgreSQL must pass through it
  return join(home, 'pg');
}

/** A parent for throw-away clusters: the temp directory, or the runtime directory if it is out of reach. */
export async function scratchParent(ids: PostgresIdentity): Promise<string> {
  return !ids || canReach(ids, tmpdir()) ? tmpdir() : await runtimeDir(ids);
}

let runtime: Promise<string> | undefined;

/**
 * /var/tmp/lods-embedded-postgres: root-owned, 0755, so that nobody else can plant files in it.
 * Checked once per process (binaries and cluster placement both come here; `ids` never changes).
 */
function runtimeDir(ids: NonNullable<PostgresIdentity>): Promise<string> {
  runtime ??= checkRuntimeDir(ids);
  return runtime;
}

/** Where root's staged binaries and out-of-reach clusters go (checked, and created, by runtimeDir). */
export function runtimeDirPath(): string {
  return join(existsSync('/var/tmp') ? '/var/tmp' : tmpdir(), 'lods-embedded-postgres');
}

/**
 * Every place the embedded PostgreSQL of this checkout may have left things for `preferred` (its
 * DATA_DIR/pg), existing or not, without creating anything: the clusters (where PostgreSQL could
 * reach it, and the runtime directory's), and the runtime directory's entries of this checkout
 * (the cluster's `cluster-<key>` and the staged `binaries-<key>`, half-staged copies included).
 */
export async function checkoutLeftovers(preferred: string): Promise<{ clusters: string[]; runtimeEntries: string[] }> {
  const wanted = resolve(preferred);
  const runtime = runtimeDirPath();
  const cluster = `cluster-${keyOf(wanted)}`;
  const binaries = `binaries-${keyOf(packagedNativeDir())}`;
  const names = existsSync(runtime) ? await readdir(runtime) : [];
  return {
    clusters: [wanted, join(runtime, cluster, 'pg')],
    runtimeEntries: names
      .filter((name) => name === cluster || name === binaries || name.startsWith(`${binaries}.partial-`))
      .map((name) => join(runtime, name)),
  };
}

async function checkRuntimeDir(ids: NonNullable<PostgresIdentity>): Promise<string> {
  const dir = runtimeDirPath();
  await mkdir(dir, { recursive: true });
  const stat = await lstat(dir);
  if (!stat.isDirectory() || stat.uid !== 0 || (stat.mode & 0o022) !== 0) {
    throw new EmbeddedPostgresError(
      `The embedded PostgreSQL cannot use ${dir}: it is not a directory owned by root and writable only by root; remove it, or ${USE_DATABASE_URL}.`,
    );
  }
  await chmod(dir, 0o755);
  if (!canReach(ids, dir)) {
    throw new EmbeddedPostgresError(
      `The embedded PostgreSQL runs as the OS user "${ids.name}", who cannot reach ${dir} either; ${USE_DATABASE_URL}.`,
    );
  }
  return dir;
}

/** The platform package embedded-postgres depends on, resolved from where embedded-postgres is. */
function packagedNativeDir(): string {
  const wrapper = createRequire(import.meta.url).resolve('embedded-postgres');
  const entry = createRequire(wrapper).resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
  return resolve(dirname(entry), '..', 'native');
}

/** Asks the kernel rather than reading mode bits: `test` runs as `ids`, as PostgreSQL will. */
function canReach(ids: NonNullable<PostgresIdentity>, path: string): boolean {
  return spawnSync('test', ['-x', path], { uid: ids.uid, gid: ids.gid, stdio: 'ignore' }).status === 0;
}

function lookUpUser(name: string): PostgresIdentity {
  const id = (flag: string) => spawnSync('id', [flag, name], { encoding: 'utf8' });
  const [uid, gid] = [id('-u'), id('-g')];
  if (uid.status !== 0 || gid.status !== 0) return null;
  return { name, uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

function keyOf(path: string): string {
  return createHash('sha256').update(path).digest('hex').slice(0, 16);
}

async function copyTree(from: string, to: string): Promise<void> {
  await mkdir(to);
  await chmod(to, 0o755); // whatever the umask (files keep their modes: hard links, or copyFile)
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const [source, target] = [join(from, entry.name), join(to, entry.name)];
    if (entry.isDirectory()) await copyTree(source, target);
    else if (entry.isSymbolicLink()) await symlink(await readlink(source), target);
    else await link(source, target).catch(() => copyFile(source, target));
  }
}
