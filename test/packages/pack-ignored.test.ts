// `npm pack` in a package folder (README: how to use the client elsewhere) leaves its tarball there:
// git must ignore it, so a newcomer's checkout does not show stray untracked files.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { execFileChild } from '../support/child-processes.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const run = promisify(execFileChild);

describe('npm pack leftovers', () => {
  it('the tarball npm pack writes in each package folder is ignored by git', async function () {
    if (!existsSync(join(ROOT, '.git'))) return this.skip(); // not a git checkout
    for (const dir of ['packages/client', 'packages/receiver-kit']) {
      const { name, version } = JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as {
        name: string;
        version: string;
      };
      // npm's tarball name: the scope's @ dropped, / replaced by -.
      const tarball = `${dir}/${name.replace(/^@/, '').replace('/', '-')}-${version}.tgz`;
      const ignored = await run('git', ['check-ignore', '--no-index', tarball], { cwd: ROOT }).then(
        () => true,
        () => false,
      );
      expect(ignored, `${tarball} is not ignored by .gitignore`).to.equal(true);
    }
  });
});
