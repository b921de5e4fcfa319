// The operator console (/console, docs/console.md) in a real headless Chromium, against the
// real service, worker and receivers: sign in with an API key, a failing receiver's dead letter
// replayed with "Replay" arrives and its attempt shows, "Send test event" arrives signed (verified
// with the receiver kit), "Rotate secret" shows the new secret once and deliveries verify with it,
// a key without receivers:manage sees no receiver actions, and no page logs a console error or a
// CSP violation. (The screenshots of docs/console.md: screenshots.test.ts.)
import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { verifyDelivery } from '@lods/receiver-kit';
import { listDeadLetters } from '../../src/webhooks/delivery/redeliver.ts';
import { testDb } from '../hooks.ts';
import { createTestKey } from '../support/api.ts';
import { launchChromiumOrSkip } from '../support/chromium.ts';
import { type ConsoleWorld, startConsoleWorld } from '../support/console-world.ts';
import { deliveryState, eventually, publishOne as publish, type WebhookStack } from '../support/webhooks.ts';

const SECRET = 'console-test-secret-0123456789abcdef';

describe('operator console in a browser', function () {
  this.timeout(60_000);
  let world: ConsoleWorld;
  let stack: WebhookStack;
  let browser: Browser | null = null;
  let admin: string;
  /** Console errors and uncaught page errors of every page opened (CSP violations are console errors). */
  const problems: string[] = [];

  const newReceiver = () => world.newReceiver();
  const publishOne = () => publish(stack);
  async function openPage(): Promise<Page> {
    const page = await browser!.newPage({ viewport: { width: 1400, height: 900 } });
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`${page.url()}: ${e.message}`));
    page.on('dialog', (d) => void d.accept());
    return page;
  }
  async function signIn(key: string): Promise<Page> {
    const page = await openPage();
    await page.goto(`${stack.api.url}/console`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    return page;
  }
  const rowOf = (page: Page, text: string) => page.locator('tr', { hasText: text });
  // The headers are read once the row is there: while the receivers load there is no table yet, and
  // the index -1 of a column not found would pick the row's last cell (seen: 'Disable Rotate secret…').
  const cell = async (page: Page, row: ReturnType<typeof rowOf>, column: string) => {
    await row.waitFor();
    return await row
      .locator('td')
      .nth((await page.locator('thead th').allInnerTexts()).indexOf(column))
      .innerText();
  };

  before(async function () {
    this.timeout(600_000);
    world = await startConsoleWorld();
    ({ stack, admin } = world);
    browser = await launchChromiumOrSkip(this);
  });
  after(async () => {
    await browser?.close();
    await world?.close();
  });
  afterEach(() => {
    expect(problems, 'console errors').to.deep.equal([]);
  });

  it('signs in with an API key, shows a failing receiver\'s dead letter, and "Replay" delivers it and shows the attempt', async () => {
    const failing = await newReceiver();
    failing.reply({ status: 500, body: 'down for maintenance' });
    const receiver = await stack.addReceiver(failing.url, { secret: SECRET });
    const eventId = await publishOne();
    await failing.waitFor(1);
    await eventually(
      async () => (await listDeadLetters(testDb().pool, { receiverId: receiver.id })).length === 1,
      10_000,
      'dead letter',
    );

    const page = await openPage();
    await page.goto(`${stack.api.url}/console`);
    await page.getByLabel('API key').fill(admin);
    await page.getByRole('button', { name: 'Sign in' }).click();
    const row = rowOf(page, failing.url);
    await row.waitFor();
    expect(await cell(page, row, 'Dead')).to.equal('1');
    expect(await cell(page, row, 'Success rate (24 h)')).to.equal('0 % of 1');
    expect(await cell(page, row, 'Status')).to.equal('Enabled');
    expect(await page.evaluate(() => Object.keys(sessionStorage))).to.deep.equal(['lods.console.apiKey']);
    expect(page.url()).to.not.include(admin);

    await row.getByRole('link', { name: failing.url }).click();
    const letter = rowOf(page, eventId).filter({ has: page.getByRole('button', { name: 'Replay' }) });
    await letter.waitFor();
    expect(await letter.innerText()).to.include('HTTP 500');
    expect(await rowOf(page, eventId).first().innerText()).to.include('down for maintenance'); // the failed attempt's response
    failing.reply({ status: 200 });
    await letter.getByRole('button', { name: 'Replay' }).click();
    await page.getByText('Replayed 1 dead letter').waitFor();
    // Seen once in CI (PostgreSQL 15 pass): replayed, yet not delivered within 20 s; the queue's state says why.
    const [, replayed] = await failing
      .waitFor(2)
      .catch(async (error: Error) =>
        Promise.reject(new Error(`${error.message}: ${await deliveryState(receiver.id)}`)),
      );
    expect(JSON.parse(replayed!.body.toString()).id).to.equal(eventId);
    expect(verifyDelivery({ rawBody: replayed!.body, headers: replayed!.headers, secret: SECRET })).to.include({
      ok: true,
    });
    await eventually(
      async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        return (await page.locator('section.attempts tbody tr').first().innerText()).includes('Success');
      },
      10_000,
      'the replayed attempt on the page',
    );
    await page.getByText('No dead letters.').waitFor();
    await page.close();
  });

  it('"Send test event" arrives signed; "Rotate secret" shows the new secret once and later deliveries verify with it', async () => {
    const target = await newReceiver();
    await stack.addReceiver(target.url, { secret: SECRET, types: ['LEARNING_OPPORTUNITY_DELETED'] });
    const page = await signIn(admin);
    const row = rowOf(page, target.url);
    await row.getByRole('button', { name: 'Send test event' }).click();
    const [test] = await target.waitFor(1);
    const verified = verifyDelivery({ rawBody: test!.body, headers: test!.headers, secret: SECRET });
    expect(verified.ok && verified.other).to.deep.include({ type: 'WEBHOOK_TEST', data: null });
    await page.getByText(/Test event .* queued/).waitFor();

    await row.getByRole('button', { name: 'Rotate secret' }).click();
    const secret = await page.locator('#notice code.secret').innerText();
    expect(secret).to.match(/^[A-Za-z0-9_-]{43}$/);
    await page.getByRole('button', { name: 'Dismiss' }).click();
    expect(await page.locator('body').innerText()).to.not.include(secret);
    await rowOf(page, target.url).getByRole('button', { name: 'Send test event' }).click();
    const [, after] = await target.waitFor(2);
    expect(verifyDelivery({ rawBody: after!.body, headers: after!.headers, secret })).to.include({ ok: true });
    expect(verifyDelivery({ rawBody: after!.body, headers: after!.headers, secret: SECRET })).to.include({
      ok: false,
      reason: 'SIGNATURE_MISMATCH',
    });
    await page.close();
  });

  it('"Rotate secret" of a Standard Webhooks receiver, for a receivers:manage key: a generated whsec_ secret shown once, both signatures during the grace', async () => {
    const target = await newReceiver();
    const added = await stack.addReceiver(target.url, {
      scheme: 'standard-webhooks',
      types: ['LEARNING_OPPORTUNITY_DELETED'],
    });
    const oldSecret = added.secret!;
    const page = await signIn(await createTestKey(['receivers:manage']));
    const row = rowOf(page, target.url);
    expect(await cell(page, row, 'Receiver')).to.include('Standard Webhooks');
    await row.getByRole('button', { name: 'Rotate secret' }).click();
    const secret = await page.locator('#notice code.secret').innerText();
    expect(secret).to.match(/^whsec_[A-Za-z0-9+/]+=*$/);
    await page.getByRole('button', { name: 'Dismiss' }).click();
    await rowOf(page, target.url).getByRole('button', { name: 'Send test event' }).click();
    const [delivery] = await target.waitFor(1);
    const headers = delivery!.headers as Record<string, string>;
    expect(headers['webhook-signature']!.split(' ')).to.have.length(2);
    for (const key of [secret, oldSecret])
      expect(() => new StandardWebhook(key).verify(delivery!.body.toString(), headers)).to.not.throw();
    await page.close();
  });

  it("shows what the key's scopes allow: no receiver actions without receivers:manage, and which scope is missing", async () => {
    const target = await newReceiver();
    const receiver = await stack.addReceiver(target.url);
    const reader = await createTestKey(['graphql:read']);
    const page = await signIn(reader);
    await page.getByRole('heading', { name: 'Events' }).waitFor(); // a reader starts on the events
    await page.goto(`${stack.api.url}/console#/receivers`);
    await page.getByText('the API key needs the "receivers:manage" scope').waitFor();
    await page.goto(`${stack.api.url}/console#/receivers/${receiver.id}`);
    await page.getByText('see and replay dead letters, the API key needs the "receivers:manage" scope').waitFor();
    for (const name of ['Disable', 'Enable', 'Rotate secret', 'Send test event', 'Replay', 'Replay all'])
      expect(await page.getByRole('button', { name, exact: true }).count(), name).to.equal(0);
    await page.close();

    const catalogOnly = await createTestKey(['catalog:read']);
    const refused = await openPage();
    await refused.goto(`${stack.api.url}/console`);
    await refused.getByLabel('API key').fill(catalogOnly);
    await refused.getByRole('button', { name: 'Sign in' }).click();
    await refused.getByRole('alert').filter({ hasText: '"graphql:read"' }).waitFor();
    expect(await refused.evaluate(() => sessionStorage.length)).to.equal(0);
    await refused.close();

    // A key revoked while signed in: the next call is refused, the console signs out and says why.
    const revoked = await signIn(await createTestKey(['graphql:read']));
    await revoked.getByRole('heading', { name: 'Events' }).waitFor();
    await testDb().pool.query(
      `update api_key set revoked_at = now() where key_hash = encode(sha256(convert_to($1, 'utf8')), 'hex')`,
      [await revoked.evaluate(() => sessionStorage.getItem('lods.console.apiKey'))],
    );
    const notAccepted = revoked.getByRole('alert').filter({ hasText: 'The API key was not accepted' });
    await eventually(
      async () => {
        if ((await notAccepted.count()) === 1) return true;
        await revoked
          .getByRole('button', { name: 'Apply' })
          .click({ timeout: 1000 })
          .catch(() => {}); // gone once signed out
        return false;
      },
      10_000,
      'signed out after the revocation',
    );
    await revoked.getByLabel('API key').waitFor();
    expect(await revoked.evaluate(() => sessionStorage.length)).to.equal(0);
    await revoked.close();
    // The refused calls (403 at sign-in, 401 after the revocation) are the browser's network error lines, not the console's.
    problems.splice(0, problems.length, ...problems.filter((p) => !/status of 40[13]/.test(p)));
  });

  it("lists events with filters, shows an event's body and its attempts per receiver, and signs out", async () => {
    const target = await newReceiver();
    await stack.addReceiver(target.url, { secret: SECRET });
    const eventId = await publishOne();
    await target.waitFor(1);
    const page = await signIn(admin);
    await rowOf(page, target.url).waitFor();
    await page.getByRole('link', { name: 'Events', exact: true }).click();
    await page.getByLabel('Type').selectOption('LEARNING_OPPORTUNITY_PUBLISHED');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('link', { name: eventId }).waitFor();
    await page.getByLabel('Resource').fill('not-an-id');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('alert').filter({ hasText: 'resourceId: must be a UUID' }).waitFor();
    await page.getByLabel('Resource').fill('');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('link', { name: eventId }).click();
    await page.locator('pre.body').waitFor();
    expect(JSON.parse(await page.locator('pre.body').innerText())).to.include({
      id: eventId,
      type: 'LEARNING_OPPORTUNITY_PUBLISHED',
    });
    await page.getByText('Success', { exact: true }).first().waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).to.equal(0);
    await page.close();
  });

  it('shows only the page of the latest Apply when an earlier one answers later (no second table)', async () => {
    const eventId = await publishOne();
    const page = await signIn(admin);
    await page.getByRole('link', { name: 'Events', exact: true }).click();
    await page.getByRole('link', { name: eventId }).waitFor();
    // The first Apply (published events only) answers a second late; the second (all events) at once.
    let slowAnswered = false;
    await page.route('**/graphql', async (request) => {
      const body = request.request().postDataJSON() as { query: string; variables?: { type?: string } };
      if (body.query.includes('webhookEvents') && body.variables?.type === 'LEARNING_OPPORTUNITY_PUBLISHED') {
        await new Promise((r) => setTimeout(r, 1000));
        slowAnswered = true;
      }
      await request.continue();
    });
    await page.getByLabel('Type').selectOption('LEARNING_OPPORTUNITY_PUBLISHED');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByLabel('Type').selectOption('');
    await page.getByRole('button', { name: 'Apply' }).click();
    await eventually(async () => slowAnswered, 10_000, 'the slow answer arrived');
    await page.waitForTimeout(200); // time for a stale render to land, were it still shown
    expect(await page.getByRole('link', { name: eventId }).count()).to.equal(1);
    expect(await page.locator('main table').count()).to.equal(1);
    expect(await page.getByLabel('Type').inputValue()).to.equal('');
    await page.close();
  });

  it('GraphiQL at /console/graphql runs a query with the signed-in key', async () => {
    const page = await signIn(admin);
    await page.goto(`${stack.api.url}/console/graphql`);
    await page.locator('.graphiql-container').waitFor();
    await page.locator('.graphiql-execute-button').click();
    await page.locator('.result-window').getByText('receivers:manage').waitFor();
    // The schema's docs, for a key that may introspect (graphql:read), and the editor's completion.
    await page.getByRole('button', { name: /documentation explorer/i }).click();
    await page.locator('.graphiql-doc-explorer').getByText('Query', { exact: true }).click();
    await page.locator('.graphiql-doc-explorer').getByText('webhookReceivers', { exact: true }).first().waitFor();
    await page.locator('.graphiql-query-editor .CodeMirror').click();
    await page.keyboard.press('Control+End');
    await page.keyboard.type('\n{ webhookRec');
    await page.locator('.CodeMirror-hints').waitFor();
    await page.close();

    // A key that may not introspect: no docs (and no refused request), the scope named, queries run.
    const manager = await signIn(await createTestKey(['receivers:manage']));
    await manager.goto(`${stack.api.url}/console/graphql`);
    await manager.getByText('The schema docs need the graphql:read scope').first().waitFor();
    await manager.locator('.graphiql-execute-button').click();
    await manager.locator('.result-window').getByText('receivers:manage').waitFor();
    await manager.close();
  });

  it('GraphiQL keeps typed queries in this tab only, and Sign out clears them; it links back to the console', async () => {
    const page = await signIn(admin);
    // What an older GraphiQL left in localStorage goes when the page loads.
    await page.evaluate(() => localStorage.setItem('graphiql:query', '{ leftover }'));
    await page.goto(`${stack.api.url}/console/graphql`);
    await page.locator('.graphiql-container').waitFor();
    await page.locator('.graphiql-query-editor .CodeMirror').click();
    await page.keyboard.press('Control+End');
    await page.keyboard.type('\n# secret-typed-here');
    const stored = () =>
      page.evaluate(() => ({
        local: Object.keys(localStorage).filter((k) => k.includes('graphiql')),
        session: Object.entries(sessionStorage)
          .filter(([k]) => k.includes('graphiql'))
          .map(([, v]) => v)
          .join('\n'),
      }));
    await eventually(
      async () => (await stored()).session.includes('secret-typed-here'),
      5000,
      'GraphiQL saved its tab',
    );
    expect((await stored()).local).to.deep.equal([]);
    await page.getByRole('link', { name: '← Console' }).click();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await stored()).to.deep.equal({ local: [], session: '' });
    await page.close();
  });

  it('serves every page and asset from the service with a strict Content-Security-Policy', async () => {
    const get = (path: string, init?: RequestInit) => fetch(`${stack.api.url}${path}`, init);
    const page = await get('/console');
    expect(page.status).to.equal(200);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp)
      .to.include("default-src 'none'")
      .and.include("script-src 'self'")
      .and.include("style-src 'self'")
      .and.include("form-action 'none'");
    expect(csp).to.not.include('unsafe');
    const html = await page.text();
    expect(html).to.not.match(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
    expect(html).to.not.match(/<style|style=/);
    expect((await get('/console/graphql')).headers.get('content-security-policy')).to.equal(csp);
    for (const asset of [
      '/console/assets/main.js',
      '/console/vendor/graphiql.min.js',
      '/console/vendor/react.production.min.js',
    ]) {
      const res = await get(asset);
      expect(res.status, asset).to.equal(200);
      expect(res.headers.get('content-type'), asset).to.match(/^(text|application)\/javascript/);
    }
    expect((await get('/console/assets/index.html')).status).to.equal(404);
    expect((await get('/console/vendor/package.json')).status).to.equal(404);
    const post = await get('/console', { method: 'POST' });
    expect([post.status, post.headers.get('content-type')]).to.deep.equal([
      405,
      'application/problem+json; charset=utf-8',
    ]);
  });
});
