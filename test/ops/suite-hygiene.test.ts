// `npm test` changes nothing on the machine (issue 18 item 13): a browser test with no browser at
// hand skips with one line saying how to enable it, and runs no package manager on the way. Tried
// as it happens: a real browser test file (Chromium's, then Firefox's) in a mocha child process
// (which starts its own embedded PostgreSQL, as root too), with no browser to find and with a PATH
// whose package managers and account tools only record that they were called; dpkg's status, apt's
// history, /etc/passwd and /etc/group must read the same after it (a call by absolute path). As root, the
// embedded PostgreSQL runs as an existing OS user and never creates one.
import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { findChromium, launchChromiumOrSkip } from '../support/chromium.ts';
import { findFirefox, firefoxOrSkip, launchFirefox } from '../support/firefox.ts';
import { OS_USERS, rootIdentity } from '../../src/db/postgres-placement.ts';
import { execFileChild } from '../support/child-processes.ts';

const REPO = resolve(import.meta.dirname, '../..');
const PACKAGE_MANAGERS = [
  'apt-get',
  'apt',
  'dpkg',
  'snap',
  'yum',
  'dnf',
  'apk',
  'sudo',
  'useradd',
  'adduser',
  'groupadd',
];

// What installing a package or creating an account changes, whoever runs it and by whatever path
// (the shims below only catch calls through PATH). A file that is absent or unreadable reads as ''.
const MACHINE_FILES = ['/var/lib/dpkg/status', '/var/log/apt/history.log', '/etc/passwd', '/etc/group'];
async function machineState(): Promise<Record<string, string>> {
  const entries = await Promise.all(
    MACHINE_FILES.map(async (path) => {
      const content = await readFile(path).catch(() => Buffer.alloc(0));
      return [path, createHash('sha256').update(content).digest('hex')] as const;
    }),
  );
  return Object.fromEntries(entries);
}

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
        const before = await machineState();
        const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((done, fail) =>
          execFileChild(
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
        expect(await machineState(), 'packages and accounts, as before the run').to.deep.equal(before);
      } finally {
        await rm(shims, { recursive: true, force: true });
      }
    });

  it('as root, the embedded PostgreSQL runs as postgres, else nobody, and creates no account when neither exists', () => {
    const looked: string[] = [];
    const users = (present: Record<string, number>) => (name: string) => {
      looked.push(name);
      return name in present ? { name, uid: present[name]!, gid: present[name]! } : null;
    };
    expect(rootIdentity(users({ postgres: 105, nobody: 65534 }))).to.deep.equal({
      name: 'postgres',
      uid: 105,
      gid: 105,
    });
    expect(rootIdentity(users({ nobody: 65534 }))).to.deep.equal({ name: 'nobody', uid: 65534, gid: 65534 });
    looked.length = 0;
    expect(() => rootIdentity(users({})))
      .to.throw(/none of the OS users "postgres", "nobody" exists to run it as: create one, or set DATABASE_URL/)
      .with.property('message')
      .that.does.not.include('\n');
    // Only looked up, in order: nothing was created in between.
    expect(looked).to.deep.equal([...OS_USERS]);
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
  // Chromium wrote its crash reporter's settings to ~/.config/chromium, Firefox its crash helper's to
  // ~/.config/mozilla, and dconf its cache to ~/.cache: left in root's home by every run with browsers.
  const BROWSERS: { name: string; start: (context: Mocha.Context) => Promise<{ close(): Promise<void> }> }[] = [
    { name: 'Chromium', start: (context) => launchChromiumOrSkip(context) },
    { name: 'Firefox', start: (context) => launchFirefox(firefoxOrSkip(context)) },
  ];
  for (const { name, start } of BROWSERS)
    it(`${name}, started and closed as the browser tests do, writes nothing in the home directory`, async function () {
      const home = await mkdtemp(join(tmpdir(), 'lods-home-'));
      const before = process.env.HOME;
      process.env.HOME = home;
      try {
        const browser = await start(this);
        await browser.close();
        expect(await readdir(home, { recursive: true })).to.deep.equal([]);
      } finally {
        process.env.HOME = before;
        await rm(home, { recursive: true, force: true });
      }
    });
});
