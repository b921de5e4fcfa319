// GET /docs: the API reference rendered in a real (headless) browser, with no key and nothing
// loaded from anywhere but the service.
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import type { Api } from '../../src/app/service.ts';
import { getJson, startTestApi } from '../support/api.ts';
import { launchChromiumOrSkip } from '../support/chromium.ts';

describe('API reference page (/docs)', () => {
  let api: Api;
  let browser: Browser | null = null;

  before(async function () {
    this.timeout(60_000);
    api = await startTestApi();
    browser = await launchChromiumOrSkip(this);
  });
  after(async () => {
    await browser?.close();
    await api?.close();
  });

  it('shows both endpoints, the bearer auth scheme and the problem types, all served by the service', async function () {
    this.timeout(60_000);
    const page = await browser!.newPage();
    const requested: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    const response = await page.goto(`${api.url}/docs`);
    expect(response?.status()).to.equal(200);

    const paths = page.locator('.opblock-summary-path');
    await paths.first().waitFor();
    expect((await paths.allTextContents()).map((t) => t.replace(/\u200b/g, ''))).to.include.members([
      '/v1/learning-opportunities',
      '/v1/learning-opportunities/{id}',
    ]);
    expect(await page.locator('.opblock-summary-method').first().textContent()).to.equal('GET');
    const text = await page.locator('body').innerText();
    for (const type of [
      '/problems/invalid-parameters',
      '/problems/unauthenticated',
      '/problems/forbidden',
      '/problems/not-found',
    ])
      expect(text).to.contain(type);

    await page.getByRole('button', { name: 'Authorize' }).first().click();
    const dialog = page.locator('.modal-ux');
    await dialog.waitFor();
    expect(await dialog.innerText()).to.match(/bearerAuth\s*\(http, Bearer\)/);

    expect(requested.length).to.be.above(2);
    for (const url of requested) expect(url.startsWith(`${api.url}/`), url).to.equal(true);
    await page.close();
  });

  it('needs no key and lets no other origin in', async () => {
    const res = await getJson(api, '/docs', null);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/^text\/html/);
    expect(res.headers.get('content-security-policy')).to.match(/default-src 'self'/);
    const asset = await getJson(api, '/docs/assets/swagger-ui-bundle.js', null);
    expect(asset.status).to.equal(200);
    expect(asset.headers.get('content-type')).to.match(/javascript/);
    expect((await getJson(api, '/docs/assets/package.json', null)).status).to.equal(404);
    expect((await getJson(api, '/docs', null, { method: 'POST' })).status).to.equal(405);
  });
});
