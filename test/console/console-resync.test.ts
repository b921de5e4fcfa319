// The receiver page of the operator console in a real headless Chromium: it shows the receiver's rate
// cap and its last resync, and "Resync" (resyncWebhookReceiver, as `receivers resync`) sends the
// receiver the latest state of every published record again, shows its progress while it is queued
// and its result; a disabled receiver's "Resync" is not offered. No page logs a console error or a CSP
// violation. A paused receiver's page says until when, and "End pause" ends the pause.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { disableReceiver, getReceiver, updateReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { testDb } from '../hooks.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { launchChromiumOrSkip } from '../support/chromium.ts';
import { type ConsoleWorld, startConsoleWorld } from '../support/console-world.ts';
import { eventually, publishOne, testSecrets, type WebhookStack } from '../support/webhooks.ts';
import { drained } from '../webhooks/convergence-support.ts';

describe('operator console: a receiver page shows its rate cap and resyncs it; a pause ends on request', function () {
  this.timeout(120_000);
  let world: ConsoleWorld;
  let stack: WebhookStack;
  let browser: Browser | null = null;
  const problems: string[] = [];
  const manage = () => ({ pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true });

  async function signIn(): Promise<Page> {
    const page = await browser!.newPage({ viewport: { width: 1400, height: 900 } });
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`${page.url()}: ${e.message}`));
    page.on('dialog', (d) => void d.accept());
    await page.goto(`${stack.api.url}/console`);
    await page.getByLabel('API key').fill(world.admin);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    return page;
  }

  before(async function () {
    this.timeout(600_000);
    world = await startConsoleWorld();
    ({ stack } = world);
    browser = await launchChromiumOrSkip(this);
  });
  after(async () => {
    await browser?.close();
    await world?.close();
  });
  afterEach(() => {
    expect(problems, 'console errors').to.deep.equal([]);
  });

  it('"Resync" sends every published record again, shows its progress and result; the rate cap is shown', async () => {
    const receiver = await world.newReceiver();
    const { id } = await stack.addReceiver(receiver.url);
    await updateReceiver(manage(), id, { maxPerSecond: 50 });
    const ids = Array.from({ length: 30 }, () => randomUUID());
    await stack.api.writes.upsertMany(
      ids.map((r) => parseLearningOpportunityInput(buildLearningOpportunityInput({ id: r }))),
    );
    await stack.api.writes.publishMany(ids);
    await receiver.waitFor(30);
    await drained(testDb(), 30_000);
    const { rows } = await testDb().pool.query<{ n: number }>(
      `select count(*)::int as n from learning_opportunity where status = 'PUBLISHED'`,
    );
    const published = rows[0]!.n;

    const page = await signIn();
    await page.goto(`${stack.api.url}/console#/receivers/${id}`);
    await page.locator('#rate-cap').waitFor();
    expect(await page.locator('#rate-cap').innerText()).to.equal(
      'at most 50 deliveries per second, across every worker',
    );
    expect(await page.locator('#resync').innerText()).to.equal('none');

    const from = receiver.requests.length;
    await page.getByRole('button', { name: 'Resync' }).click();
    const notice = page.locator('#notice .message');
    await notice.waitFor({ timeout: 30_000 });
    expect(await notice.innerText()).to.match(
      new RegExp(
        `Resync of ${receiver.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} queued: ${published} records, ${published} queued`,
      ),
    );
    await receiver.waitFor(from + published);
    await drained(testDb(), 30_000);
    const sent = receiver.requests
      .slice(from)
      .map((r) => (JSON.parse(r.body.toString()) as { resource: { id: string } }).resource.id);
    for (const record of ids) expect(sent, `record ${record}`).to.include(record);
    expect((await getReceiver(manage(), id))!.resync).to.include({ total: published, queued: published, pending: 0 });
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page
      .locator('#resync', { hasText: `every published record: ${published} records, ${published} queued, 0 pending` })
      .waitFor();
    await page.close();
  });

  it('"Set rate cap" changes an existing receiver’s cap, removes it when empty, and names a bad value', async () => {
    const receiver = await world.newReceiver();
    const { id } = await stack.addReceiver(receiver.url);
    const page = await signIn();
    await page.goto(`${stack.api.url}/console#/receivers/${id}`);
    const input = page.getByLabel('Rate cap (deliveries per second)');
    /**
     * Sets `value` and waits for the notice that says `said`, and for the page drawn again after the
     * action (the notice is shown first, and the input filled next must be the new page's).
     */
    const set = async (value: string, said: string) => {
      await input.fill(value);
      await page.getByRole('button', { name: 'Set rate cap' }).click();
      await page.locator('#notice', { hasText: said }).waitFor({ timeout: 10_000 });
      // Once the page is drawn again after the action, the focus is on what it said.
      await page.waitForFunction(
        (text) =>
          document.activeElement?.classList.contains('message') && document.activeElement.textContent!.includes(text),
        said,
        { timeout: 10_000 },
      );
    };
    await input.waitFor();
    expect(await input.inputValue(), 'no cap yet').to.equal('');
    // Once the page is drawn, a navigation has put the focus on its heading.
    await page.waitForFunction(() => document.activeElement?.tagName === 'H2', null, { timeout: 5000 });

    await set('20', 'at most 20 deliveries per second now');
    expect((await getReceiver(manage(), id))!.maxPerSecond).to.equal(20);
    await page.locator('#rate-cap', { hasText: 'at most 20 deliveries per second' }).waitFor();
    expect(await input.inputValue(), 'the page shows the cap it has').to.equal('20');

    await set('many', 'give a whole number of deliveries per second');
    await set('0', 'maxPerSecond');
    expect((await getReceiver(manage(), id))!.maxPerSecond, 'a bad value changes nothing').to.equal(20);

    await set('', 'has no rate cap now');
    expect((await getReceiver(manage(), id))!.maxPerSecond).to.equal(null);
    await page.locator('#rate-cap', { hasText: 'none' }).waitFor();
    await page.close();
  });

  it("shows the resync's progress while it is queued", async () => {
    const receiver = await world.newReceiver();
    const { id } = await stack.addReceiver(receiver.url);
    const ids = Array.from({ length: 600 }, () => randomUUID());
    for (let i = 0; i < ids.length; i += 300) {
      const batch = ids.slice(i, i + 300);
      await stack.api.writes.upsertMany(
        batch.map((r) => parseLearningOpportunityInput(buildLearningOpportunityInput({ id: r }))),
      );
      await stack.api.writes.publishMany(batch);
    }
    await drained(testDb(), 60_000);
    const page = await signIn();
    await page.goto(`${stack.api.url}/console#/receivers/${id}`);
    await page.getByRole('button', { name: 'Resync' }).waitFor();
    // Every record's advisory lock is taken by its batch: a writer holding one record's lock holds
    // that batch (and the mutation) back, long enough to see the progress shown.
    const [held] = ids;
    const writer = await testDb().pool.connect();
    try {
      await writer.query('begin');
      await writer.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [held]);
      await page.getByRole('button', { name: 'Resync' }).click();
      await page
        .locator('#resync-progress', { hasText: /Resync being queued: \d+ records, \d+ queued/ })
        .waitFor({ timeout: 15_000 });
    } finally {
      await writer.query('rollback');
      writer.release();
    }
    await page.locator('#notice .message', { hasText: /queued/ }).waitFor({ timeout: 60_000 });
    await drained(testDb(), 60_000);
    await page.close();
  });

  it('a disabled receiver is not offered "Resync"', async () => {
    const receiver = await world.newReceiver();
    const { id } = await stack.addReceiver(receiver.url);
    await disableReceiver({ pool: testDb().pool }, id);
    const page = await signIn();
    await page.goto(`${stack.api.url}/console#/receivers/${id}`);
    await page.locator('#rate-cap').waitFor();
    expect(await page.getByRole('button', { name: 'Resync' }).isDisabled()).to.equal(true);
    expect(await page.locator('section.settings').innerText()).to.match(/enable it first/);
    expect(await page.locator('#rate-cap').innerText()).to.equal('none');
    await page.close();
  });

  // A receiver that asked to be left alone (503 Retry-After: an hour): its page says until when, the
  // receivers page offers "End pause" (as `receivers enable`), and that sends the deferred delivery at once.
  it('shows the pause and "End pause" sends the deferred delivery at once', async () => {
    const receiver = await world.newReceiver();
    receiver.reply({ status: 503, headers: { 'retry-after': '3600' } });
    const { id } = await stack.addReceiver(receiver.url);
    await publishOne(stack);
    await receiver.waitFor(1);
    await eventually(async () => (await getReceiver(manage(), id))?.pausedUntil != null, 10_000, 'the pause recorded');
    receiver.reply({ status: 200 });

    const page = await signIn();
    await page.goto(`${stack.api.url}/console#/receivers/${id}`);
    await page.locator('#paused').waitFor();
    expect(await page.locator('#paused').innerText()).to.match(/^until .+: it answered 429\/503 with Retry-After/);

    await page.goto(`${stack.api.url}/console#/receivers`);
    const row = page.locator('tr', { hasText: receiver.url });
    await row.getByRole('button', { name: 'End pause' }).click();
    await page.locator('#notice .message', { hasText: 'Ended the pause' }).waitFor();
    await receiver.waitFor(2, 15_000); // the deferred retry, at once rather than in an hour
    expect((await getReceiver(manage(), id))!.pausedUntil).to.equal(null);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await row.getByRole('button', { name: 'Disable' }).waitFor();
    expect(await row.getByRole('button', { name: 'End pause' }).count()).to.equal(0);
    await page.close();
  });
});
