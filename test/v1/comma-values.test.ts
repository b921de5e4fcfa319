// A value holding a comma (the provider "Acme, Inc.", the city "Washington, D.C.") is written `\,` in
// a comma-separated list parameter: without a way to write it, no list, view or calendar could select
// such records (the comma split the value in two). A backslash before a comma or a backslash is
// written `\\`; any other stands for itself.
import { createCatalogClient, sync, type SyncBatch, viewFilter } from '@lods/client';
import { expect } from 'chai';
import { joinValues, splitValues } from '../../src/catalog/list-parameters.ts';
import { canonicalView, parseView } from '../../src/views/view.ts';
import { getJson, useTestApi } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';

type Page = { results: { id: string }[]; pagination: { totalCount: number } };

describe('values with commas in list parameters', () => {
  const served = useTestApi(['catalog:read']);
  let acme: string;
  let plain: string;
  before(async () => {
    const session = (city: string) => ({
      id: crypto.randomUUID(),
      startsAt: '2030-05-01T09:00:00.000Z',
      endsAt: null,
      timezone: null,
      format: 'IN_PERSON',
      location: { name: null, address: null, city, country: 'US' },
      capacity: null,
    });
    acme = (
      await createRecord(served.api.writes, {
        provider: { name: 'Acme, Inc.', url: null },
        sessions: [session('Washington, D.C.')],
      })
    ).id;
    plain = (await createRecord(served.api.writes, { provider: { name: 'Acme', url: null } })).id;
  });

  const ids = async (query: string) => {
    const res = await getJson(served.api, `/v1/learning-opportunities?${query}&limit=100`, served.key);
    expect(res.status, `${query}: ${res.text}`).to.equal(200);
    return (res.body as Page).results.map((r) => r.id).sort();
  };

  it('reads `\\,` as a comma inside a value, in the list and beside other values', async () => {
    expect(await ids('provider=Acme%5C%2C%20Inc.')).to.deep.equal([acme]);
    expect(await ids('city=Washington%5C%2C%20D.C.')).to.deep.equal([acme]);
    expect(await ids('provider=Acme%5C%2C%20Inc.,Acme')).to.deep.equal([acme, plain].sort());
    // Unescaped, the comma separates two values, as before.
    expect(await ids('provider=Acme%2C%20Inc.')).to.deep.equal([plain]);
  });

  it('is what @lods/client sends for a value with a comma', async () => {
    const client = createCatalogClient({ baseUrl: served.api.url, apiKey: served.key });
    const page = await client.listLearningOpportunities({ provider: ['Acme, Inc.'], limit: 100 });
    expect(page.results.map((r) => r.id)).to.deep.equal([acme]);
  });

  it('is what @lods/client walks for a view with such a value: the synced copy holds its records', async () => {
    const client = createCatalogClient({ baseUrl: served.api.url, apiKey: served.key });
    const copy = new Set<string>();
    const apply = async (batch: SyncBatch) => {
      for (const c of batch.changes) if (c.op === 'upsert') copy.add(c.id);
    };
    // The view's canonical text, as the service answers it, escapes the comma in the value.
    const view = canonicalView(parseView('provider=Acme%5C%2C%20Inc.,Beta'));
    expect(viewFilter(view)).to.deep.equal({ provider: ['Acme, Inc.', 'Beta'] });
    await sync({ client, view, apply });
    expect([...copy]).to.deep.equal([acme]);
  });

  it('splits and joins values with commas and backslashes alike', () => {
    for (const values of [['a'], ['a,b', 'c'], ['x\\', 'y'], ['\\,', ','], ['C:\\dir']])
      expect(splitValues(joinValues(values)), JSON.stringify(values)).to.deep.equal(values);
    expect(splitValues('C:\\dir,a')).to.deep.equal(['C:\\dir', 'a']);
  });

  it('keeps such a value in a view, whose canonical text reads back the same', () => {
    const view = parseView('provider=Acme%5C%2C%20Inc.,Acme&city=Washington%5C%2C%20D.C.');
    expect(view).to.deep.equal({ provider: ['Acme', 'Acme, Inc.'], city: ['washington, d.c.'] });
    expect(parseView(canonicalView(view))).to.deep.equal(view);
    expect(canonicalView(parseView('provider=Acme'))).to.equal('provider=Acme');
  });
});
