// `npm test` changes nothing on the machine (issue 18 item 13): no test installs system packages
// (the browser test uses a Chromium that is present, else skips saying how to enable it).
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { expect } from 'chai';
import { findChromium } from '../support/chromium.ts';

const TEST_DIR = resolve(import.meta.dirname, '..');
// A package manager run as a program (spawn/execFile argument or shell text), or a global npm install.
const INSTALLS =
  /['"`](?:apt-get|apt|dpkg|yum|dnf|apk|snap)['"`]|\b(?:apt-get|apt|yum|dnf) (?:install -y|-y install)\b|\bnpm (?:install|i) (?:-g|--global)\b/;

async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sources(path)));
    else if (entry.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

describe('the suite leaves the machine alone', () => {
  it('no test or test support file runs a package manager to install anything', async () => {
    const offenders: string[] = [];
    for (const file of await sources(TEST_DIR)) {
      if (file === import.meta.filename) continue;
      const lines = (await readFile(file, 'utf8')).split('\n');
      for (const [i, line] of lines.entries()) {
        if (!line.trimStart().startsWith('//') && INSTALLS.test(line))
          offenders.push(`${relative(TEST_DIR, file)}:${i + 1}: ${line.trim()}`);
      }
    }
    expect(offenders).to.deep.equal([]);
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
