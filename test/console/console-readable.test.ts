// What the console's pages show, read as a user reads them, in a real headless Chromium against the
// real service: readable labels instead of the API's enum values on every page (one mapping,
// labels.js, that names every value of the schema's enums); timestamps on one line with their
// relative time; the receiver page's 24 h chart (a bar per hour, successes and the rest stacked);
// an outcome filter that lists every DeliveryOutcome; event bodies that wrap; and a graphql:read key's
// receiver page without a literal "null". No console error.
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { disableReceiver, updateReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { testDb } from '../hooks.ts';
import { createTestKey } from '../support/api.ts';
import { publishOne, testSecrets } from '../support/webhooks.ts';
import { useChromiumConsole, schemaEnum, WHEN } from './console-chromium.ts';
import { insertAttemptHistory, insertLongBodyEvent } from './console-fixtures.ts';

/** Values of the API's enums as they must not appear on a page (an event's JSON body aside). */
const RAW_ENUM =
  /\b(ALL_EVENTS|LATEST_STATE|SERVICE_V1|STANDARD_WEBHOOKS|HTTP_ERROR|SUCCESS|MANUAL|FAILING|LEARNING_OPPORTUNITY_\w+|WEBHOOK_TEST)\b/;

describe('operator console: readable pages', function () {
  this.timeout(60_000);
  const chrome = useChromiumConsole();
  const { pages } = chrome;
  const url = (path: string) => `${chrome.world.stack.api.url}/console${path}`;
  /** The page's text outside event bodies (pre.body shows the JSON as sent). */
  const shownText = (page: Page) =>
    page.locator('main').evaluate((main) => {
      const copy = main.cloneNode(true) as HTMLElement;
      for (const pre of copy.querySelectorAll('pre.body')) pre.remove();
      return copy.innerText;
    });

  it('one label module names every value of the schema enums it shows', async () => {
    const page = await pages.signIn(chrome.world.admin);
    const labels = await page.evaluate(async () => {
      const m = await import('/console/assets/labels.js' as string);
      const keys = (o: object) => Object.keys(o);
      return {
        EventType: keys(m.EVENT_TYPES),
        DeliveryOutcome: keys(m.OUTCOMES),
        WebhookDeliveryMode: keys(m.DELIVERY_MODES),
        WebhookSignatureScheme: keys(m.SIGNATURE_SCHEMES),
        WebhookReceiverDisabledReason: keys(m.DISABLED_REASONS),
      };
    });
    for (const [name, values] of Object.entries(labels)) expect(values, name).to.deep.equal(schemaEnum(name));
    await page.close();
  });

  it('shows labels, not enum values, on the receivers, receiver and events pages', async () => {
    const ok = await chrome.world.newReceiver();
    const failing = await chrome.world.newReceiver();
    failing.reply({ status: 500, body: 'no' });
    const standard = await chrome.world.stack.addReceiver(ok.url, { scheme: 'standard-webhooks' });
    const v1 = await chrome.world.stack.addReceiver(failing.url, { secret: 'readable-secret-0123456789' });
    const manage = { pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true };
    await updateReceiver(manage, standard.id, { mode: 'LATEST_STATE' });
    const eventId = await publishOne(chrome.world.stack);
    await ok.waitFor(1);
    await failing.waitFor(1);
    await disableReceiver(manage, v1.id);

    const page = await pages.signIn(chrome.world.admin);
    const row = (text: string) => page.locator('tr', { hasText: text });
    await row(ok.url).waitFor();
    expect(await row(ok.url).innerText()).to.include('Standard Webhooks · Latest state');
    expect(await row(failing.url).innerText())
      .to.include('Service v1 · All events')
      .and.include('Disabled: by an operator');
    expect(await shownText(page)).to.not.match(RAW_ENUM);

    await page.goto(url(`#/receivers/${v1.id}`));
    await page.locator('section.dead-letters table').waitFor();
    expect(await page.locator('section.attempts tbody tr').first().innerText()).to.include(
      'HTTP error (dead-lettered)',
    );
    expect(await page.locator('#signature').innerText()).to.equal('Service v1');
    expect(await page.locator('#delivery-mode').innerText()).to.equal('All events');
    expect(await page.locator('#event-types').innerText()).to.equal('Every type');
    expect(await shownText(page)).to.not.match(RAW_ENUM);

    await page.goto(url('#/events'));
    await page.getByRole('link', { name: eventId }).waitFor();
    expect(await page.locator('tr', { hasText: eventId }).innerText()).to.include('Published');
    expect(await page.getByLabel('Type').locator('option').allInnerTexts()).to.deep.equal([
      'All catalog events',
      'Published',
      'Updated',
      'Archived',
      'Deleted',
      'Left view',
      'Test event',
    ]);
    await page.getByLabel('Type').selectOption({ label: 'Published' });
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('link', { name: eventId }).click();
    await page.locator('pre.body').waitFor();
    expect(await page.locator('dl.facts').innerText()).to.include('Published');
    expect(await shownText(page)).to.not.match(RAW_ENUM);
    await page.close();
  });

  it('shows every timestamp on one line with its relative time', async () => {
    const target = await chrome.world.newReceiver();
    const { id } = await chrome.world.stack.addReceiver(target.url);
    const eventId = await publishOne(chrome.world.stack);
    await target.waitFor(1);
    const { rows } = await testDb().pool.query<{ at: Date }>('select occurred_at as at from event where id = $1', [
      eventId,
    ]);
    const occurred = new Date(rows[0]!.at);
    // A narrow window: a timestamp that could wrap would.
    const page = await pages.signIn(chrome.world.admin, { width: 900 });
    await page.clock.setFixedTime(new Date(occurred.getTime() + 5 * 60_000 + 20_000));
    await page.goto(url('#/events'));
    const cell = page.locator('tr', { hasText: eventId }).locator('td').first();
    expect(await cell.innerText()).to.equal(
      `${occurred.toISOString().slice(0, 10)} ${occurred.toISOString().slice(11, 19)} UTC · 5 min ago`,
    );
    for (const path of ['#/receivers', `#/receivers/${id}`, '#/events', `#/events/${eventId}`]) {
      await page.goto(url(path));
      await page.locator('main time.when').first().waitFor();
      const shown = await page.locator('main time.when').evaluateAll((times) =>
        times.map((t) => ({
          text: (t as HTMLElement).innerText,
          lines: Math.round(t.getBoundingClientRect().height / parseFloat(getComputedStyle(t).lineHeight)),
        })),
      );
      expect(shown.length, path).to.be.greaterThan(0);
      for (const { text, lines } of shown) {
        expect(text, path).to.match(WHEN);
        expect(lines, `${path}: ${text}`).to.equal(1);
      }
    }
    // The event's attempts are headed by the receiver's URL (the key may see receivers), linking to it.
    await page.goto(url(`#/events/${eventId}`));
    const heading = page.locator('main h4', { hasText: `Receiver ${target.url}` });
    await heading.waitFor();
    expect(await heading.locator('a').getAttribute('href')).to.equal(`#/receivers/${id}`);
    await page.close();
  });

  it("draws the receiver's last 24 hours: a bar per hour, successes and failures stacked", async () => {
    const target = await chrome.world.newReceiver();
    const { id } = await chrome.world.stack.addReceiver(target.url);
    const eventId = await insertLongBodyEvent();
    const [busy, quiet] = await insertAttemptHistory(id, eventId, [
      { hoursAgo: 3, successes: 4, failures: 2 },
      { hoursAgo: 10, successes: 1, failures: 0 },
    ]);
    const page = await pages.signIn(chrome.world.admin);
    await page.goto(url(`#/receivers/${id}`));
    const chart = page.getByRole('img', { name: /Attempts per hour, last 24 hours/ });
    await chart.waitFor();
    expect(await chart.getAttribute('aria-label')).to.include('5 of 7 attempts succeeded');
    const hours = chart.locator('g.hour');
    expect(await hours.count()).to.equal(24);
    const hour = (start: string) =>
      hours.filter({ has: page.locator(`title:text-matches("^${start.slice(11, 16)}–")`) });
    const height = async (bars: ReturnType<typeof hour>, kind: string) =>
      Number(await bars.locator(`rect.bar.${kind}`).getAttribute('height'));
    expect(await hour(busy!).locator('title').textContent()).to.match(/UTC: 6 attempts, 4 succeeded, 2 did not$/);
    const [busyOk, busyFail, quietOk] = [
      await height(hour(busy!), 'ok'),
      await height(hour(busy!), 'fail'),
      await height(hour(quiet!), 'ok'),
    ];
    expect(busyOk).to.be.closeTo(2 * busyFail, 0.01);
    expect(busyOk).to.be.closeTo(4 * quietOk, 0.01);
    expect(await hour(quiet!).locator('rect.bar.fail').getAttribute('height')).to.equal('0');
    expect(await chart.locator('rect.bar.none').count()).to.equal(22);
    expect(await page.locator('figure.hourly figcaption').innerText())
      .to.include('Succeeded')
      .and.include('Did not succeed');
    await page.close();
  });

  it('filters attempts by every outcome the API has', async () => {
    const target = await chrome.world.newReceiver();
    const { id } = await chrome.world.stack.addReceiver(target.url);
    const page = await pages.signIn(chrome.world.admin);
    await page.goto(url(`#/receivers/${id}`));
    const filter = page.getByLabel('Outcome');
    await filter.waitFor();
    const values = await filter
      .locator('option')
      .evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value));
    expect(values).to.deep.equal(['', ...schemaEnum('DeliveryOutcome')]);
    expect(values).to.include.members(['SUPERSEDED', 'SECRET_UNAVAILABLE', 'THROTTLED']);
    await filter.selectOption({ label: 'Superseded' });
    await page.getByText('No attempts with this outcome.').waitFor();
    expect(await filter.inputValue()).to.equal('SUPERSEDED');
    await page.close();
  });

  it("wraps an event body's long lines instead of scrolling sideways", async () => {
    const eventId = await insertLongBodyEvent();
    const page = await pages.signIn(chrome.world.admin);
    await page.goto(url(`#/events/${eventId}`));
    const body = page.locator('pre.body');
    await body.waitFor();
    expect(await body.innerText()).to.include('x'.repeat(600));
    const overflow = await body.evaluate((pre) => ({
      pre: pre.scrollWidth - pre.clientWidth,
      page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    }));
    expect(overflow).to.deep.equal({ pre: 0, page: 0 });
    await page.close();
  });

  it('a graphql:read key on a receiver page sees its attempts, a sentence for what it may not see, and no "null"', async () => {
    const target = await chrome.world.newReceiver();
    const { id } = await chrome.world.stack.addReceiver(target.url);
    await publishOne(chrome.world.stack);
    await target.waitFor(1);
    const page = await pages.signIn(await createTestKey(['graphql:read']));
    await page.goto(url(`#/receivers/${id}`));
    await page.locator('section.attempts table').waitFor();
    const text = await page.locator('main').innerText();
    expect(text).to.not.match(/\bnull\b/);
    expect(text).to.include(`Receiver ${id}`);
    expect(text).to.include(
      'To see this receiver\'s settings, its 24 h chart and its dead letters, the API key needs the "receivers:manage" scope',
    );
    await page.close();
  });
});
