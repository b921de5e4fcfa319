// A Firefox that is already on the machine for browser tests, driven by puppeteer-core over WebDriver
// BiDi (playwright-core drives only its own patched Firefox; puppeteer-core never downloads a
// browser). The suite never installs one (`npm test` changes nothing outside the clone and temp
// dirs): FIREFOX_PATH, else /usr/bin/firefox-esr, else /usr/bin/firefox; with none the test is
// skipped with one line saying how to enable it. CI (.ci/run) installs Debian's firefox-esr.
import { existsSync } from 'node:fs';
import puppeteer, { type Browser } from 'puppeteer-core';
import { withPrivateHome } from './browser-home.ts';

const DEFAULT_PATHS = ['/usr/bin/firefox-esr', '/usr/bin/firefox'];

/** The browser to use (`path`), or the one line saying why there is none and how to get one. */
export function findFirefox(
  env: NodeJS.ProcessEnv = process.env,
  candidates: readonly string[] = DEFAULT_PATHS,
): { path: string } | { missing: string } {
  const chosen = env.FIREFOX_PATH;
  if (chosen)
    return existsSync(chosen)
      ? { path: chosen }
      : { missing: `FIREFOX_PATH=${chosen} does not exist; point it at a Firefox binary` };
  const found = candidates.find((path) => existsSync(path));
  if (found) return { path: found };
  return {
    missing: `no Firefox at ${candidates.join(' or ')}; to run this test install Debian's firefox-esr package (as .ci/run does) or set FIREFOX_PATH to a Firefox binary`,
  };
}

/** The Firefox binary to use, or the test (or hook) is skipped with the reason printed on one line. */
export function firefoxOrSkip(context: Mocha.Context): string {
  const found = findFirefox();
  if ('missing' in found) {
    console.warn(`    skipped (browser test): ${found.missing}`);
    context.skip();
  }
  return found.path;
}

/**
 * A headless Firefox driven over WebDriver BiDi. With `chrome` BiDi also reaches Firefox's own
 * window (test/support/firefox-chrome.ts), and its password manager is on as in a user's Firefox.
 */
export async function launchFirefox(executablePath: string, options: { chrome?: boolean } = {}): Promise<Browser> {
  return await withPrivateHome((env) =>
    puppeteer.launch({
      env,
      browser: 'firefox',
      protocol: 'webDriverBiDi',
      executablePath,
      headless: true,
      defaultViewport: { width: 1400, height: 900 },
      ...(options.chrome && {
        args: ['-remote-allow-system-access'],
        extraPrefsFirefox: { 'signon.rememberSignons': true },
      }),
    }),
  );
}
