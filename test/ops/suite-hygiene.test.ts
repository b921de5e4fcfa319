// `npm test` changes nothing on the machine (issue 18 item 13): a browser test with no browser at
// hand skips with one line saying how to enable it, and runs no package manager on the way. Tried
// as it happens: a real browser test file in a mocha child process, with no Chromium to find and
// with a PATH whose package managers only record that they were called.
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { findChromium } from '../support/chromium.ts';

const REPO = resolve(import.meta.dirname, '../..');
const PACKAGE_MANAGERS = ['apt-get', 'apt', 'dpkg', 'snap', 'yum', 'dnf', 'apk', 'sudo'];

describe('the suite leaves the machine alone', function () {
  this.timeout(120_000);

  it('a browser test with no browser skips with one line and calls no package manager', async () => {
    const shims = await mkdtemp(join(tmpdir(), 'lods-no-install-'));
    const calls = join(shims, 'calls');
    try {
      for (const name of PACKAGE_MANAGERS) {
        await writeFile(join(shims, name), `#!/bin/sh\necho "${name} $*" >> '${calls}'\nexit 1\n`);
        await chmod(join(shims, name), 0o755);
      }
      const env = { ...process.env, PATH: `${shims}:${process.env.PATH}`, CHROMIUM_PATH: '/nonexistent/chromium' };
      const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((done, fail) =>
        execFile(
          join(REPO, 'node_modules/.bin/mocha'),
          ['test/docs/reference-page.test.ts'],
          { cwd: REPO, env, timeout: 110_000 },
          (error, stdout, stderr) =>
            error ? fail(new Error(`${error.message}\n${stdout}\n${stderr}`)) : done({ stdout, stderr }),
        ),
      );
      const output = stdout + stderr;
      expect(output).to.match(/skipped \(browser test\): CHROMIUM_PATH=\/nonexistent\/chromium does not exist/);
      expect(output).to.match(/0 passing[\s\S]*pending/);
      expect(await readFile(calls, 'utf8').catch(() => '')).to.equal('');
    } finally {
      await rm(shims, { recursive: true, force: true });
    }
  });

  it('the browser test takes CHROMIUM_PATH, and without a browser says in one line how to enable it', () => {
    expect(findChromium({ CHROMIUM_PATH: process.execPath })).to.deep.equal({ path: process.execPath });
    const missing = findChromium({ CHROMIUM_PATH: '/nonexistent/chromium' });
    expect(missing)
      .to.have.property('missing')
      .that.matches(/CHROMIUM_PATH=\/nonexistent\/chromium does not exist/)
      .and.not.include('\n');
  });
});
