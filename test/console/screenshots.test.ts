// The console's screenshots in docs/console.md (docs/screenshots/<page>-<browser>.png, 1280x800), in
// Chromium and in Firefox, of a service with a few receivers (a healthy one with a day of attempts, a
// failing one with dead letters, a disabled one) and events: written only with CONSOLE_SCREENSHOTS=1
// (`CONSOLE_SCREENSHOTS=1 npx mocha test/console/screenshots.test.ts`); the suite skips this file.
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Page as ChromiumPage } from 'playwright-core';
import type { Page as FirefoxPage } from 'puppeteer-core';
import { disableReceiver, updateReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { testDb } from '../hooks.ts';
import { launchChromiumOrSkip } from '../support/chromium.ts';
import { type ConsoleWorld, startConsoleWorld } from '../support/console-world.ts';
import { firefoxOrSkip, launchFirefox } from '../support/firefox.ts';
import { eventually, publishOne, testSecrets } from '../support/webhooks.ts';
import { insertAttemptHistory } from './console-fixtures.ts';

const DIR = resolve(import.meta.dirname, '../../docs/screenshots');
const VIEWPORT = { width: 1280, height: 800 };

/** What a screenshot needs of a page, in either driver. */
type Shot = {
  goto: (path: string) => Promise<void>;
  signIn: (key: string) => Promise<void>;
  /** Waits for the first element matching a CSS selector. */
  waitFor: (selector: string) => Promise<void>;
  click: (selector: string) => Promise<void>;
  type: (selector: string, text: string) => Promise<void>;
  scrollTo: (selector: string) => Promise<void>;
  save: (name: string) => Promise<void>;
};

(process.env.CONSOLE_SCREENSHOTS ? describe : describe.skip)('console screenshots (docs/screenshots)', function () {
  this.timeout(180_000);
  let world: ConsoleWorld;
  let healthy: string;
  let failing: string;
  let eventId: string;

  before(async function () {
    this.timeout(600_000);
    world = await startConsoleWorld();
    const manage = { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true };
    const ok = await world.newReceiver();
    const down = await world.newReceiver();
    down.reply({ status: 503, body: 'Service Unavailable' });
    healthy = (await world.stack.addReceiver(ok.url, { scheme: 'standard-webhooks' })).id;
    failing = (await world.stack.addReceiver(down.url, { secret: 'screenshot-secret-0123456789' })).id;
    const paused = await world.stack.addReceiver('http://127.0.0.1:9/paused', {
      secret: 'screenshot-secret-0123456789',
    });
    await updateReceiver(manage, paused.id, { mode: 'LATEST_STATE', types: ['LEARNING_OPPORTUNITY_PUBLISHED'] });
    await disableReceiver(manage, paused.id);
    for (let i = 0; i < 3; i++) eventId = await publishOne(world.stack);
    await ok.waitFor(3);
    await down.waitFor(3);
    await updateReceiver(manage, healthy, { view: 'format=ONLINE&country=DE', maxPerSecond: 50 });
    await eventually(
      async () =>
        (await testDb().pool.query('select 1 from delivery_attempt where dead_lettered')).rowCount === 3 || null,
      10_000,
      'the dead letters',
    );
    const day = Array.from({ length: 23 }, (_, i) => ({
      hoursAgo: 23 - i,
      successes: [3, 5, 8, 12, 9, 4, 2, 6][i % 8]!,
      failures: i === 6 || i === 7 ? 4 : i === 15 ? 1 : 0,
    }));
    await insertAttemptHistory(healthy, eventId, day);
    mkdirSync(DIR, { recursive: true });
  });
  after(async () => {
    await world?.close();
  });

  async function shoot(browser: string, page: Shot): Promise<void> {
    await page.goto('/console');
    await page.waitFor('#api-key');
    await page.save(`sign-in-${browser}`);
    await page.signIn(world.admin);
    await page.waitFor('main table');
    await page.save(`receivers-${browser}`);
    await page.click('details.add-receiver summary');
    await page.type('#add-url', 'https://hooks.example.org/lods');
    await page.type('#add-view', 'format=WEEKLY&country=DE');
    await page.click('form.add-receiver button[type="submit"]');
    await page.waitFor('#add-view-error:not(:empty)');
    await page.scrollTo('details.add-receiver');
    await page.save(`add-receiver-${browser}`);
    await page.goto(`/console#/receivers/${healthy}`);
    await page.waitFor('section.attempts table');
    await page.save(`receiver-${browser}`);
    await page.goto(`/console#/receivers/${failing}`);
    await page.waitFor('section.dead-letters table');
    await page.scrollTo('section.dead-letters');
    await page.save(`dead-letters-${browser}`);
    await page.goto('/console#/events');
    await page.waitFor('main table');
    await page.save(`events-${browser}`);
    await page.goto(`/console#/events/${eventId}`);
    await page.waitFor('main table');
    await page.save(`event-${browser}`);
    await page.goto('/console/graphql');
    await page.waitFor('.graphiql-execute-button');
    await page.click('.graphiql-execute-button');
    await page.waitFor('.result-window .CodeMirror-line');
    await page.save(`graphiql-${browser}`);
  }

  it('Chromium', async function () {
    const browser = await launchChromiumOrSkip(this);
    try {
      const page: ChromiumPage = await browser.newPage({ viewport: VIEWPORT });
      await shoot('chromium', {
        goto: async (path) => void (await page.goto(`${world.stack.api.url}${path}`)),
        signIn: async (key) => {
          await page.getByLabel('API key').fill(key);
          await page.getByRole('button', { name: 'Sign in' }).click();
        },
        waitFor: (selector) => page.locator(selector).first().waitFor(),
        click: (selector) => page.locator(selector).first().click(),
        type: (selector, text) => page.locator(selector).fill(text),
        scrollTo: async (selector) => {
          await page
            .locator(selector)
            .first()
            .evaluate((el) => el.scrollIntoView());
        },
        save: async (name) => {
          await page.mouse.move(0, 0); // no hover highlight in the picture
          await page.screenshot({ path: resolve(DIR, `${name}.png`) });
        },
      });
    } finally {
      await browser.close();
    }
  });

  it('Firefox', async function () {
    const browser = await launchFirefox(firefoxOrSkip(this));
    try {
      const page: FirefoxPage = await browser.newPage();
      await page.setViewport(VIEWPORT);
      await shoot('firefox', {
        goto: async (path) => void (await page.goto(`${world.stack.api.url}${path}`)),
        signIn: async (key) => {
          await (await page.waitForSelector('#api-key'))!.type(key);
          await page.click('form.sign-in button[type="submit"]');
        },
        waitFor: async (selector) => void (await page.waitForSelector(selector)),
        click: (selector) => page.click(selector),
        type: async (selector, text) => void (await (await page.waitForSelector(selector))!.type(text)),
        scrollTo: (selector) => page.$eval(selector, (el) => el.scrollIntoView()),
        save: async (name) => {
          await page.mouse.move(0, 0);
          await page.screenshot({ path: resolve(DIR, `${name}.png`) });
        },
      });
    } finally {
      await browser.close();
    }
  });
});
