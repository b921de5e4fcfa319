// A Chromium that is already on the machine for browser tests, driven by playwright-core (which never
// downloads a browser). The suite never installs one (`npm test` changes nothing outside the clone
// and temp dirs): CHROMIUM_PATH, else /usr/bin/chromium; with neither the test is skipped with one
// line saying how to enable it. CI (.ci/run) installs Chromium before `npm test`.
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { withPrivateHome } from './browser-home.ts';

const DEFAULT_PATH = '/usr/bin/chromium';

// Without the networking flags Chromium keeps calling Google's hosts, refused on a closed network.
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--no-first-run',
  '--disable-quic',
  '--disable-component-update',
  '--disable-sync',
];

/** The browser to use (`path`), or the one line saying why there is none and how to get one. */
export function findChromium(env: NodeJS.ProcessEnv = process.env): { path: string } | { missing: string } {
  const chosen = env.CHROMIUM_PATH;
  if (chosen)
    return existsSync(chosen)
      ? { path: chosen }
      : { missing: `CHROMIUM_PATH=${chosen} does not exist; point it at a Chromium binary` };
  if (existsSync(DEFAULT_PATH)) return { path: DEFAULT_PATH };
  return {
    missing: `no Chromium at ${DEFAULT_PATH}; to run this test install Debian's chromium package (as .ci/run does) or set CHROMIUM_PATH to a Chromium binary`,
  };
}

/** A headless Chromium, or the test (or hook) is skipped with the reason printed on one line. */
export async function launchChromiumOrSkip(context: Mocha.Context): Promise<Browser> {
  const found = findChromium();
  if ('missing' in found) {
    console.warn(`    skipped (browser test): ${found.missing}`);
    context.skip();
  }
  return await withPrivateHome((env) => chromium.launch({ executablePath: found.path, args: ARGS, env }));
}
