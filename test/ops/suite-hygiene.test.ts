// `npm test` changes nothing on the machine (issue 18 item 13): a browser test with no browser at
// hand skips with one line saying how to enable it, and runs no package manager on the way. Tried
// as it happens: a real browser test file (Chromium's, then Firefox's) in a mocha child process,
// with no browser to find and with a PATH whose package managers only record that they were called.
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { findChromium } from '../support/chromium.ts';
import { findFirefox } from '../support/firefox.ts';

const REPO = resolve(import.meta.dirname, '../..');
const PACKAGE_MANAGERS = ['apt-get', 'apt', 'dpkg', 'snap', 'yum', 'dnf', 'apk', 'sudo'];

describe('the suite leaves the machine alone', function () {
  this.timeout(120_000);

  const BROWSER_TESTS = [
    { file: 'test/docs/reference-page.test.ts', variable: 'CHROMIUM_PATH', browser: 'chromium' },
    { file: 'test/console/console-firefox.test.ts', variable: 'FIREFOX_PATH', browser: 'firefox' },
  ];
  for (const { file, variable, browser } of BROWSER_TESTS)
    it(`a browser test with no browser skips with one line and calls no package manager (${browser})`, async () => {
      const shims = await mkdtemp(join(tmpdir(), 'lods-no-install-'));
      const calls = join(shims, 'calls');
      try {
        for (const name of PACKAGE_MANAGERS) {
          await writeFile(join(shims, name), `#!/bin/sh\necho "${name} $*" >> '${calls}'\nexit 1\n`);
          await chmod(join(shims, name), 0o755);
        }
        const env = { ...process.env, PATH: `${shims}:${process.env.PATH}`, [variable]: `/nonexistent/${browser}` };
        const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((done, fail) =>
          execFile(
            join(REPO, 'node_modules/.bin/mocha'),
            [file],
            { cwd: REPO, env, timeout: 110_000 },
            (error, stdout, stderr) =>
              error ? fail(new Error(`${error.message}\n${stdout}\n${stderr}`)) : done({ stdout, stderr }),
          ),
        );
        const output = stdout + stderr;
        expect(output).to.include(`skipped (browser test): ${variable}=/nonexistent/${browser} does not exist`);
        expect(output.match(/skipped \(browser test\)/g)).to.have.length(1);
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

  it('the Firefox test takes FIREFOX_PATH, else firefox-esr or firefox, and without one says in one line how to enable it', () => {
    expect(findFirefox({ FIREFOX_PATH: process.execPath })).to.deep.equal({ path: process.execPath });
    expect(findFirefox({}, ['/nonexistent/firefox-esr', process.execPath])).to.deep.equal({ path: process.execPath });
    expect(findFirefox({ FIREFOX_PATH: '/nonexistent/firefox' }))
      .to.have.property('missing')
      .that.matches(/FIREFOX_PATH=\/nonexistent\/firefox does not exist/)
      .and.not.include('\n');
    expect(findFirefox({}, ['/nonexistent/firefox-esr']))
      .to.have.property('missing')
      .that.includes("install Debian's firefox-esr package (as .ci/run does)")
      .and.not.include('\n');
  });
});
