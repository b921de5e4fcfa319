// The console's pages in a real headless Firefox (puppeteer-core over WebDriver BiDi), as
// console-readable.test.ts and console-add-receiver.test.ts check them in Chromium: "Add receiver"
// with its secret shown once (gone on the next page) and a refusal said under the field it names;
// labels instead of enum values and timestamps on one line with their relative time on every page; the
// receiver page's 24 h chart; the outcome filter with every DeliveryOutcome; a wrapping event body;
// a graphql:read key's receiver page without "null". No console error or CSP violation.
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import { verifyDelivery } from '@lods/receiver-kit';
import { createTestKey } from '../support/api.ts';
import { type ConsoleWorld, startConsoleWorld } from '../support/console-world.ts';
import { firefoxOrSkip, launchFirefox } from '../support/firefox.ts';
import { publishOne } from '../support/webhooks.ts';
import { schemaEnum, WHEN } from './console-chromium.ts';
import { insertAttemptHistory, insertLongBodyEvent } from './console-fixtures.ts';

const RAW_ENUM =
  /\b(ALL_EVENTS|LATEST_STATE|SERVICE_V1|STANDARD_WEBHOOKS|HTTP_ERROR|SUCCESS|LEARNING_OPPORTUNITY_\w+)\b/;
const aria = (role: string, name: string) => `::-p-aria([name="${name}"][role="${role}"])`;

describe('operator console pages in Firefox', function () {
  this.timeout(60_000);
  let world: ConsoleWorld;
  let browser: Browser | null = null;
  const problems: string[] = [];
  const url = (path: string) => `${world.stack.api.url}/console${path}`;

  async function signIn(key: string): Promise<Page> {
    const page = await browser!.newPage();
    await page.setViewport({ width: 1280, height: 800 });
    await page.evaluateOnNewDocument(() => {
      document.addEventListener('securitypolicyviolation', (e) =>
        console.error(`CSP violation: ${e.effectiveDirective} blocked ${e.blockedURI || 'inline'}`),
      );
    });
    page.on('console', (m) => void (m.type() === 'error' && problems.push(`${page.url()}: ${m.text()}`)));
    page.on('pageerror', (e) => problems.push(`${page.url()}: ${e instanceof Error ? e.message : String(e)}`));
    page.on('dialog', (d) => void d.accept());
    await page.goto(url(''));
    await (await page.waitForSelector(aria('textbox', 'API key')))!.type(key);
    await page.locator(aria('button', 'Sign in')).click();
    await page.locator(aria('button', 'Sign out')).wait();
    return page;
  }
  const text = (page: Page, selector: string) => page.$eval(selector, (el) => (el as HTMLElement).innerText);
  /** Every <time> of the page: its text and how many lines it takes. */
  const times = (page: Page) =>
    page.$$eval('main time.when', (all) =>
      all.map((t) => ({
        text: (t as HTMLElement).innerText,
        lines: Math.round(t.getBoundingClientRect().height / parseFloat(getComputedStyle(t).lineHeight)),
      })),
    );
  async function expectReadable(page: Page, path: string): Promise<void> {
    const shown = await page.$eval('main', (main) => {
      const copy = main.cloneNode(true) as HTMLElement;
      for (const pre of copy.querySelectorAll('pre.body')) pre.remove();
      return copy.innerText;
    });
    expect(shown, path).to.not.match(RAW_ENUM);
    const stamps = await times(page);
    expect(stamps.length, path).to.be.greaterThan(0);
    for (const { text: t, lines } of stamps) {
      expect(t, path).to.match(WHEN);
      expect(lines, `${path}: ${t}`).to.equal(1);
    }
  }

  before(async function () {
    this.timeout(600_000);
    const path = firefoxOrSkip(this);
    [browser, world] = await Promise.all([launchFirefox(path), startConsoleWorld()]);
  });
  after(async () => {
    await browser?.close();
    await world?.close();
  });
  afterEach(() => {
    expect(problems, 'console errors').to.deep.equal([]);
  });

  it('"Add receiver": a refused view is said under its field; the secret is shown once, signs deliveries, and goes on the next page', async () => {
    const target = await world.newReceiver();
    const page = await signIn(world.admin);
    await page.waitForSelector('details.add-receiver');
    if (!(await page.$eval('details.add-receiver', (d) => (d as HTMLDetailsElement).open)))
      await page.click('details.add-receiver summary');
    await (await page.waitForSelector('#add-url'))!.type(target.url);
    await (await page.waitForSelector('#add-view'))!.type('format=WEEKLY');
    await page.locator(aria('button', 'Add receiver')).click();
    await page.waitForSelector('#add-view-error:not(:empty)');
    expect(await text(page, '#add-view-error')).to.include('format must be among');
    expect(await text(page, '#add-errors')).to.include('View: format must be among');

    await page.$eval('#add-view', (el) => ((el as HTMLInputElement).value = ''));
    await page.locator(aria('button', 'Add receiver')).click();
    await page.waitForSelector('#notice code.secret');
    const secret = await text(page, '#notice code.secret');
    expect(secret).to.match(/^[A-Za-z0-9_-]{43}$/);
    const row = (await page.waitForSelector(`::-p-xpath(.//tr[td[contains(., "${target.url}")]])`))!;
    expect(await row.evaluate((tr) => (tr as HTMLElement).innerText)).to.include('Service v1 · All events');
    await (await row.$(aria('button', 'Send test event')))!.click();
    const [delivery] = await target.waitFor(1);
    expect(verifyDelivery({ rawBody: delivery!.body, headers: delivery!.headers, secret })).to.include({ ok: true });
    await page.locator(aria('link', 'Events')).click();
    await page.locator(aria('heading', 'Events')).wait();
    expect(await text(page, '#notice')).to.equal('');
    expect(await text(page, 'body')).to.not.include(secret);
    await page.close();
  });

  it('shows labels and one-line timestamps on every page, the 24 h chart, every outcome, and wrapping bodies', async () => {
    const target = await world.newReceiver();
    const { id } = await world.stack.addReceiver(target.url, { scheme: 'standard-webhooks' });
    const eventId = await publishOne(world.stack);
    await target.waitFor(1);
    const longId = await insertLongBodyEvent();
    await insertAttemptHistory(id, longId, [{ hoursAgo: 2, successes: 3, failures: 1 }]);
    const page = await signIn(world.admin);
    await page.waitForSelector('main table');
    await expectReadable(page, 'receivers');

    await page.goto(url(`#/receivers/${id}`));
    await page.waitForSelector('section.attempts table');
    await expectReadable(page, 'receiver');
    expect(await page.$$eval('svg.hourly-chart g.hour', (g) => g.length)).to.equal(24);
    const titles = await page.$$eval('svg.hourly-chart g.hour title', (t) => t.map((x) => x.textContent ?? ''));
    expect(titles.filter((t) => t.endsWith('UTC: 4 attempts, 3 succeeded, 1 did not'))).to.have.length(1);
    const outcomes = await page.$$eval('#outcome-filter option', (o) => o.map((x) => (x as HTMLOptionElement).value));
    expect(outcomes).to.deep.equal(['', ...schemaEnum('DeliveryOutcome')]);

    await page.goto(url('#/events'));
    await page.waitForSelector(`::-p-text(${eventId})`);
    await expectReadable(page, 'events');
    await page.goto(url(`#/events/${longId}`));
    await page.waitForSelector('pre.body');
    await expectReadable(page, 'event');
    const overflow = await page.$eval('pre.body', (pre) => ({
      pre: pre.scrollWidth - pre.clientWidth,
      page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    }));
    expect(overflow).to.deep.equal({ pre: 0, page: 0 });
    await page.close();
  });

  it('a graphql:read key on a receiver page sees no "null"', async () => {
    const { id } = await world.stack.addReceiver('http://127.0.0.1:9/read-only');
    const page = await signIn(await createTestKey(['graphql:read']));
    await page.goto(url(`#/receivers/${id}`));
    await page.waitForSelector('section.attempts');
    const shown = await text(page, 'main');
    expect(shown).to.not.match(/\bnull\b/);
    expect(shown).to.include('the API key needs the "receivers:manage" scope');
    await page.close();
  });
});
