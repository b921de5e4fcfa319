// Browsers write outside their profiles: Chromium its crash reporter's settings under
// ~/.config/chromium, Firefox its crash helper's under ~/.config/mozilla, both dconf's cache under
// ~/.cache. Each browser the suite starts gets a home of its own in a temp dir, removed when the
// browser goes, so that `npm test` leaves the user's home as it found it (test/ops/suite-hygiene.test.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Launches a browser with a home of its own (`env`, for the launch), removed when the browser disconnects or the launch fails. */
export async function withPrivateHome<B extends { on(event: 'disconnected', listener: () => void): unknown }>(
  launch: (env: NodeJS.ProcessEnv) => Promise<B>,
): Promise<B> {
  const home = mkdtempSync(join(tmpdir(), 'lods-browser-home-'));
  const remove = () => rmSync(home, { recursive: true, force: true });
  const env = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_DATA_HOME: join(home, '.local/share'),
    MOZ_CRASHREPORTER_DISABLE: '1',
  };
  try {
    const browser = await launch(env);
    browser.on('disconnected', remove);
    return browser;
  } catch (error) {
    remove();
    throw error;
  }
}
