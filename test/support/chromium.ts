// Debian's Chromium for browser tests, driven by playwright-core (which never downloads a browser).
// Missing, it is installed with apt-get when we may (root, and LODS_TEST_NO_APT unset); otherwise,
// or if that fails, the test is skipped with a message saying why.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';
const run = promisify(execFile);

// Without the networking flags Chromium keeps calling Google's hosts, refused on a closed network.
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', '--disable-quic', '--disable-component-update', '--disable-sync'];

/** Why Chromium is not available (after trying to install it), or null when it is. */
async function ensureChromium(): Promise<string | null> {
  if (existsSync(CHROMIUM_PATH)) return null;
  if (process.env.LODS_TEST_NO_APT) return `${CHROMIUM_PATH} is missing and LODS_TEST_NO_APT forbids installing it`;
  if (process.getuid?.() !== 0) return `${CHROMIUM_PATH} is missing; install it with: sudo apt-get install -y chromium`;
  const options = { timeout: 600_000, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } };
  try {
    await run('apt-get', ['install', '-y', 'chromium'], options).catch(async () => {
      await run('apt-get', ['update'], options); // a fresh machine may have no package lists yet
      await run('apt-get', ['install', '-y', 'chromium'], options);
    });
  } catch (error) {
    return `${CHROMIUM_PATH} is missing and apt-get install -y chromium failed: ${(error as Error).message.split('\n')[0]}`;
  }
  return existsSync(CHROMIUM_PATH) ? null : `apt-get installed chromium but ${CHROMIUM_PATH} is still missing`;
}

/** A headless Chromium, or the test (or hook) is skipped with the reason printed. */
export async function launchChromiumOrSkip(context: Mocha.Context): Promise<Browser> {
  const missing = await ensureChromium();
  if (missing) {
    console.warn(`    skipped: ${missing}`);
    context.skip();
  }
  return await chromium.launch({ executablePath: CHROMIUM_PATH, args: ARGS });
}
