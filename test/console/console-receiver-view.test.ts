// The operator console shows each receiver's view, in a real headless Chromium against the real
// service: in the receivers table (a "View" column) and on the receiver's page, as its canonical text
// shown as text (its `&`s and any markup-like characters never become markup), and "every record" for
// a receiver without one. No page logs a console error or a CSP violation.
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { addReceiver, updateReceiver } from '../../src/webhooks/receivers/receivers.ts';
import { testDb } from '../hooks.ts';
import { testSecrets } from '../support/webhooks.ts';
import { useChromiumConsole } from './console-chromium.ts';

// A provider whose name looks like markup, a city with a non-ASCII letter, an apostrophe: the
// canonical text keeps them percent-encoded (or as they are), and the console shows that text.
const GIVEN = "provider=%3Cb%3EBold%3C%2Fb%3E%20%26%20Co&city=K%C3%B6ln,O'Fallon&format=ONLINE";
const CANONICAL = "city=k%C3%B6ln,o'fallon&format=ONLINE&provider=%3Cb%3EBold%3C%2Fb%3E%20%26%20Co";

describe("operator console: a receiver's view in the receivers table and on its page", function () {
  this.timeout(120_000);
  const chrome = useChromiumConsole();
  const manage = () => ({ pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true });
  const signIn = () => chrome.pages.signIn(chrome.world.admin, { width: 1600 });
  const cell = async (page: Page, url: string, column: string) => {
    const row = page.locator('tr', { hasText: url });
    await row.waitFor();
    const index = (await page.locator('thead th').allInnerTexts()).indexOf(column);
    expect(index, `a "${column}" column`).to.be.greaterThan(-1);
    return row.locator('td').nth(index);
  };

  it('shows the canonical view as text, and "every record" for a receiver without one', async () => {
    const withView = await addReceiver(manage(), { url: 'http://127.0.0.1:9/console-view', view: GIVEN });
    expect(withView.view).to.equal(CANONICAL);
    const without = await addReceiver(manage(), { url: 'http://127.0.0.1:9/console-every-record' });

    const page = await signIn();
    await page.goto(`${chrome.world.stack.api.url}/console#/receivers`);
    const viewCell = await cell(page, withView.url, 'View');
    expect(await viewCell.innerText()).to.equal(CANONICAL);
    // Text, not markup: the provider's `<b>` stays percent-encoded text, and no element but the one
    // holding the text is made of it.
    expect(await viewCell.locator('b').count()).to.equal(0);
    expect(await viewCell.locator('code').innerText()).to.equal(CANONICAL);
    expect(await (await cell(page, without.url, 'View')).innerText()).to.equal('every record');

    await page.goto(`${chrome.world.stack.api.url}/console#/receivers/${withView.id}`);
    const shown = page.locator('#view');
    await shown.waitFor();
    expect(await shown.innerText()).to.equal(CANONICAL);
    expect(await shown.locator('*').count(), 'one element: the code holding the text').to.equal(1);
    expect(await shown.innerHTML()).to.include('&amp;format=ONLINE&amp;');

    await page.goto(`${chrome.world.stack.api.url}/console#/receivers/${without.id}`);
    await page.locator('#view', { hasText: 'every record' }).waitFor();

    // A change made elsewhere (the CLI, GraphQL) shows after Refresh.
    await updateReceiver(manage(), without.id, { view: 'topic=python' });
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.locator('#view', { hasText: 'topic=python' }).waitFor();
    await page.close();
  });
});
