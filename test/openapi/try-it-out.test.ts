// "Try it out" in the API reference (/docs, Swagger UI) works on the first click: no optional
// parameter of the list comes pre-filled with a value that filters (an `example` is pre-filled, and
// the examples of every filter together matched nothing: the first Execute answered `results: []`).
// Examples live in the descriptions. Checked on the document (what swagger-ui pre-fills, by its own
// rules), by sending the request the first Execute sends, and in a real browser when one is installed.
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { useTestApi } from '../support/api.ts';
import { launchChromiumOrSkip } from '../support/chromium.ts';
import { createRecord } from '../support/factories.ts';
import { deref, type Json, loadOpenApiDocument } from './openapi-validator.ts';

const doc = loadOpenApiDocument();
const LIST = '/v1/learning-opportunities';

type Parameter = Json & { name: string; in: string; required?: boolean; schema: Json };

/** The list's parameters, references resolved (the schema's too, as swagger-ui resolves them). */
function listParameters(): Parameter[] {
  const item = doc.paths[LIST]!;
  const raw = [...((item.parameters as Json[]) ?? []), ...(((item.get as Json).parameters as Json[]) ?? [])];
  return raw.map((p) => {
    const node = (typeof p.$ref === 'string' ? deref(doc, p.$ref).node : p) as Parameter;
    const schema = typeof node.schema.$ref === 'string' ? deref(doc, node.schema.$ref).node : node.schema;
    return { ...node, schema };
  });
}

/**
 * The value swagger-ui 5 puts in a parameter's input when "Try it out" opens (parameter-row.jsx,
 * setDefaultValue, OpenAPI 3): the first of `examples` (the active one), the media type's
 * `example`, `example`, the schema's `example`, the schema's `default`, the parameter's `default`.
 */
function prefilled(p: Parameter): unknown {
  const examples = p.examples as Record<string, { value?: unknown }> | undefined;
  const content = p.content as Record<string, { example?: unknown }> | undefined;
  const candidates = [
    examples ? Object.values(examples)[0]?.value : undefined,
    content ? Object.values(content)[0]?.example : undefined,
    p.example,
    p.schema.example,
    p.schema.default,
    p.default,
  ];
  return candidates.find((c) => c !== undefined);
}

describe('Try it out on the list (API reference)', () => {
  let browser: Browser | null = null;
  after(() => browser?.close()); // registered first: the browser goes before the API
  const served = useTestApi(['catalog:read']);

  before(async () => {
    for (let i = 0; i < 3; i++) await createRecord(served.api.writes);
  });

  it('no optional query parameter carries an example or examples anywhere swagger-ui could take one from', () => {
    const optional = listParameters().filter((p) => p.in === 'query' && !p.required);
    expect(optional.map((p) => p.name)).to.include.members(['updatedSince', 'format', 'city', 'q', 'facets']);
    const found: string[] = [];
    for (const p of optional) {
      const items = (p.schema.items as Json | undefined) ?? {};
      const places: [string, unknown][] = [
        ['example', p.example],
        ['examples', p.examples],
        ['content', p.content],
        ['schema.example', p.schema.example],
        ['schema.examples', p.schema.examples],
        ['schema.items.example', items.example],
        ['schema.items.examples', items.examples],
      ];
      for (const [where, value] of places) if (value !== undefined) found.push(`${p.name}: ${where}`);
    }
    expect(found).to.deep.equal([]);
  });

  it('pre-fills only defaults, and the first Execute answers the plain list', async () => {
    const query = new URLSearchParams();
    for (const p of listParameters().filter((q) => q.in === 'query')) {
      const value = prefilled(p);
      if (value === undefined) continue;
      // Only a parameter's own default: it changes nothing about the answer.
      expect(value, p.name).to.equal(p.schema.default);
      query.set(p.name, Array.isArray(value) ? value.join(',') : String(value));
    }
    expect([...query.keys()].sort()).to.deep.equal(['limit', 'offset', 'sort']);
    const get = async (target: string) =>
      (await (
        await fetch(`${served.api.url}${target}`, { headers: { authorization: `Bearer ${served.key}` } })
      ).json()) as {
        results: { id: string }[];
      };
    const first = await get(`${LIST}?${query}`);
    expect(first.results).to.have.length(3);
    expect(first.results).to.deep.equal((await get(LIST)).results);
  });

  it('in a browser: Authorize, Try it out, Execute answers 200 with the records', async function () {
    this.timeout(120_000);
    browser = await launchChromiumOrSkip(this);
    const page = await browser.newPage();
    await page.goto(`${served.api.url}/docs`);
    await page.getByRole('button', { name: 'Authorize' }).first().click();
    const dialog = page.locator('.modal-ux');
    await dialog.locator('#auth-bearer-value').fill(served.key);
    await dialog.getByRole('button', { name: 'Apply credentials' }).click();
    await dialog.getByRole('button', { name: 'Close', exact: true }).click();

    const operation = page.locator('#operations-learning-opportunities-listLearningOpportunities');
    await operation.locator('.opblock-summary').click();
    await operation.getByRole('button', { name: 'Try it out' }).click();
    await operation.getByRole('button', { name: 'Execute' }).click();
    const status = operation.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor();
    expect((await status.innerText()).trim()).to.equal('200');
    const body = await operation.locator('.live-responses-table .response-col_description pre').first().innerText();
    const page1 = JSON.parse(body) as { results: unknown[]; pagination: { totalCount: number } };
    expect(page1.results).to.have.length(3);
    expect(page1.pagination.totalCount).to.equal(3);
    await page.close();
  });
});
