// The operator console (/console, docs/console.md, issue 23) in a real headless Firefox, driven
// by puppeteer-core over WebDriver BiDi, against the real service, worker and receivers: sign in with
// the "API key" field, the receivers table, "Send test event" arriving signed at a real receiver,
// "Replay" of a dead letter, the events page, GraphiQL, "Sign out" clearing sessionStorage; no page
// logs a console error, and no CSP violation is reported (a listener installed before the page's
// own scripts reports each one as a console error). (The screenshots of docs/console.md:
// screenshots.test.ts.)
import { expect } from 'chai';
import type { Browser, ElementHandle, Page } from 'puppeteer-core';
import { verifyDelivery } from '@lods/receiver-kit';
import { listDeadLetters } from '../../src/webhooks/delivery/redeliver.ts';
import { testDb } from '../hooks.ts';
import { type ConsoleWorld, startConsoleWorld } from '../support/console-world.ts';
import { firefoxOrSkip, launchFirefox } from '../support/firefox.ts';
import { type FirefoxChrome, firefoxChrome } from '../support/firefox-chrome.ts';
import { eventually, publishOne } from '../support/webhooks.ts';

const SECRET = 'console-firefox-secret-0123456789abcdef';
const CSP_VIOLATION = 'CSP violation:';

/** An element by its accessible role and name, as a user finds it. */
const aria = (role: string, name: string) => `::-p-aria([name="${name}"][role="${role}"])`;
/** The sign-in field, by its label. */
const API_KEY = aria('textbox', 'API key');
/** The table row that shows `text` in one of its cells. */
const rowOf = (text: string) => `::-p-xpath(.//tr[td[contains(., "${text}")]])`;

describe('operator console in Firefox', function () {
  this.timeout(40_000);
  let world: ConsoleWorld;
  let browser: Browser | null = null;
  let chrome: FirefoxChrome | null = null;
  /** Console errors, uncaught page errors and CSP violations of every page opened. */
  const problems: string[] = [];
  const url = (path: string) => `${world.stack.api.url}${path}`;

  async function openPage(): Promise<Page> {
    const page = await browser!.newPage();
    // A CSP violation is a console error in Firefox 153; the standard event reports it as well, should
    // a later Firefox keep it to its own console.
    await page.evaluateOnNewDocument((prefix: string) => {
      document.addEventListener('securitypolicyviolation', (e) =>
        console.error(`${prefix} ${e.effectiveDirective} blocked ${e.blockedURI || 'inline'}`),
      );
    }, CSP_VIOLATION);
    page.on('console', (m) => void (m.type() === 'error' && problems.push(`${page.url()}: ${m.text()}`)));
    page.on('pageerror', (e) => problems.push(`${page.url()}: ${e instanceof Error ? e.message : String(e)}`));
    page.on('dialog', (d) => void d.accept());
    return page;
  }
  async function signIn(page: Page, key: string): Promise<void> {
    const response = await page.goto(url('/console'));
    expect(response!.headers()['content-security-policy']).to.include("script-src 'self'").and.not.include('unsafe');
    // Typed: puppeteer-core's Locator.fill times out over BiDi on a field found by its ARIA name.
    await (await page.waitForSelector(API_KEY))!.type(key);
    await page.locator(aria('button', 'Sign in')).click();
    await page.locator(aria('button', 'Sign out')).wait();
  }
  const text = async (handle: ElementHandle | Page, selector: string) =>
    await handle.$eval(selector, (el) => (el as HTMLElement).innerText);
  const storageKeys = (page: Page) => page.evaluate(() => Object.keys(sessionStorage));
  /** What Firefox's password manager offers to save, in any tab ("Save password for ...?"). */
  const passwordPrompts = async () =>
    (await chrome!.run(
      `gBrowser.browsers.map((b) => PopupNotifications.getNotification('password', b)?.message).filter(Boolean)`,
    )) as string[];

  before(async function () {
    this.timeout(600_000);
    const path = firefoxOrSkip(this);
    [browser, world] = await Promise.all([launchFirefox(path, { chrome: true }), startConsoleWorld()]);
    chrome = await firefoxChrome(browser);
  });
  after(async () => {
    await browser?.close();
    await world?.close();
  });
  afterEach(() => {
    expect(problems, 'console errors').to.deep.equal([]);
  });

  it('signs in with the "API key" field, shows the receivers table, and "Send test event" arrives signed', async () => {
    const target = await world.newReceiver();
    await world.stack.addReceiver(target.url, { secret: SECRET, types: ['LEARNING_OPPORTUNITY_DELETED'] });
    const page = await openPage();
    await signIn(page, world.admin);
    const row = (await page.waitForSelector(rowOf(target.url)))!;
    const headers = await page.$$eval('thead th', (ths) => ths.map((th) => th.textContent));
    const cells = await row.$$eval('td', (tds) => tds.map((td) => td.innerText));
    expect(cells[headers.indexOf('Status')]).to.equal('Enabled');
    expect(cells[headers.indexOf('Success rate (24 h)')]).to.equal('no attempts');
    expect(await row.$$(aria('button', 'Rotate secret'))).to.have.length(1);
    expect(await storageKeys(page)).to.deep.equal(['lods.console.apiKey']);
    expect(page.url()).to.not.include(world.admin);

    await (await row.$(aria('button', 'Send test event')))!.click();
    const [test] = await target.waitFor(1);
    const verified = verifyDelivery({ rawBody: test!.body, headers: test!.headers, secret: SECRET });
    expect(verified.ok && verified.other).to.deep.include({ type: 'WEBHOOK_TEST', data: null });
    await page.locator('::-p-text(queued for)').wait();
    // The key is typed into no password field: Firefox offered to save it (as the password of the
    // service's origin) in its password manager on every sign-in.
    expect(await passwordPrompts()).to.deep.equal([]);
    await page.close();
  });

  it('shows a failing receiver\'s dead letter and "Replay" delivers it', async () => {
    const failing = await world.newReceiver();
    failing.reply({ status: 500, body: 'down for maintenance' });
    const receiver = await world.stack.addReceiver(failing.url, { secret: SECRET });
    const eventId = await publishOne(world.stack);
    await eventually(
      async () => (await listDeadLetters(testDb().pool, { receiverId: receiver.id })).length === 1,
      10_000,
      'dead letter',
    );
    const page = await openPage();
    await signIn(page, world.admin);
    await page.locator(aria('link', failing.url)).click();
    const letter = (await page.waitForSelector(`section.dead-letters ${rowOf(eventId)}`))!;
    expect(await text(letter, 'td:nth-child(4)')).to.equal('HTTP 500');
    failing.reply({ status: 200 });
    await (await letter.$(aria('button', 'Replay')))!.click();
    await page.locator('::-p-text(Replayed 1 dead letter)').wait();
    const [, replayed] = await failing.waitFor(2);
    expect(JSON.parse(replayed!.body.toString()).id).to.equal(eventId);
    await page.locator('::-p-text(No dead letters.)').wait();
    await page.close();
  });

  it('lists events with a filter, shows an event\'s body and attempts, and "Sign out" clears sessionStorage', async () => {
    const target = await world.newReceiver();
    await world.stack.addReceiver(target.url, { secret: SECRET });
    const eventId = await publishOne(world.stack);
    await target.waitFor(1);
    const page = await openPage();
    await signIn(page, world.admin);
    await page.waitForSelector(rowOf(target.url));
    await page.locator(aria('link', 'Events')).click();
    await (await page.waitForSelector(aria('combobox', 'Type')))!.select('LEARNING_OPPORTUNITY_PUBLISHED');
    await page.locator(aria('button', 'Apply')).click();
    await page.locator(aria('link', eventId)).click();
    await page.waitForSelector('pre.body');
    expect(JSON.parse(await text(page, 'pre.body'))).to.include({
      id: eventId,
      type: 'LEARNING_OPPORTUNITY_PUBLISHED',
    });
    await page.locator('::-p-text(Success)').wait();
    await page.locator(aria('button', 'Sign out')).click();
    const field = (await page.waitForSelector(API_KEY))!;
    expect(await storageKeys(page)).to.deep.equal([]);
    // The field shows what is typed into it as dots (it is no password field: see the first test).
    expect(await field.evaluate((el) => getComputedStyle(el).getPropertyValue('-webkit-text-security'))).to.equal(
      'disc',
    );
    await page.close();
  });

  it('GraphiQL at /console/graphql runs a query with the signed-in key', async () => {
    const page = await openPage();
    await signIn(page, world.admin);
    await page.goto(url('/console/graphql'));
    await page.locator('.graphiql-execute-button').click();
    await page.locator('.result-window ::-p-text(receivers:manage)').wait();
    await page.close();
  });

  it('would see a password prompt: a password typed into a form that goes after a fetch is offered for saving', async () => {
    const page = await openPage();
    await page.goto(url('/console'));
    await page.evaluate(() => {
      const form = document.createElement('form');
      const input = Object.assign(document.createElement('input'), { type: 'password', id: 'control' });
      form.append(input, Object.assign(document.createElement('button'), { type: 'submit', textContent: 'Go' }));
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        void fetch('/console').then(() => form.remove());
      });
      document.body.append(form);
    });
    await (await page.waitForSelector('#control'))!.type('a-password-for-the-control');
    await page.keyboard.press('Enter');
    await eventually(async () => (await passwordPrompts()).length > 0, 5_000, 'the save prompt');
    await chrome!.run(`for (const b of gBrowser.browsers) PopupNotifications.getNotification('password', b)?.remove()`);
    await page.close();
  });

  it('would see a CSP violation: an inline style attribute is reported as a console error and as the event', async () => {
    const page = await openPage();
    await page.goto(url('/console'));
    await page.evaluate(() => document.body.setAttribute('style', 'color: red'));
    const seen = (pattern: RegExp) => problems.some((p) => pattern.test(p));
    await eventually(
      async () =>
        seen(/Content-Security-Policy: .*style-src-attr/) && seen(/CSP violation: style-src-attr blocked inline/),
      5_000,
      'the violation reported as a console error and as the event',
    );
    problems.length = 0;
    await page.close();
  });
});
