// The superuser's password of an embedded cluster: random per cluster, kept only in `<cluster>.password`
// (0600) beside it, given to initdb through that file. A cluster made when the password was the
// constant `lods-embedded` is given its own on its next start.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chown, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { EmbeddedPostgresError, type PostgresIdentity } from './postgres-placement.ts';

export const USER = 'postgres';
// The one password every cluster had before passwords were per cluster: tried only to replace it.
const LEGACY_PASSWORD = 'lods-embedded';

/** Where the superuser's password of the cluster in `dir` is kept (0600, beside it). */
export function passwordFile(dir: string): string {
  return `${dir}.password`;
}

/** The cluster's password: the one kept beside it, or a new random one (kept there first). */
export async function clusterPassword(dir: string, ids: PostgresIdentity): Promise<string> {
  const file = passwordFile(dir);
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const password = randomBytes(24).toString('base64url');
  await writeFile(file, `${password}\n`, { mode: 0o600, flag: 'wx' });
  // initdb (run as `ids`) reads it; nobody else can.
  if (ids) await chown(file, ids.uid, ids.gid);
  return password;
}

/** A cluster made with the constant password: logs in with it once and sets the cluster's own. */
export async function replaceLegacyPassword(port: number, password: string): Promise<boolean> {
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

/** initdb: a new cluster in `dir`, owned by `ids`, its superuser's password from the file beside it. */
export async function initialise(
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
