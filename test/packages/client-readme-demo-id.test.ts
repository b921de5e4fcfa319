// The client README's sample id is a record of the demo catalog (the one `npm start` seeds on its
// first embedded start), so the example finds it when run against the demo as written.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { ensureDemo } from '../../src/app/demo.ts';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { DEFAULT_CONFIG, getJson, silentLogger, startTestApi } from '../support/api.ts';
import { resetCatalog } from '../support/factories.ts';

const README = resolve(import.meta.dirname, '../../packages/client/README.md');

describe("the client README's sample id", () => {
  let api: Api;
  let dataDir: string;
  before(async () => {
    api = await startTestApi();
    dataDir = await mkdtemp(join(tmpdir(), 'lods-demo-'));
  });
  after(async () => {
    // The demo catalog goes too: in serial mode (`npx mocha test/packages/*.test.ts`) the next file
    // shares this database, and packed.test.ts expects only its own records.
    await resetCatalog();
    await api?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('is a published record of the demo catalog', async function () {
    this.timeout(60_000);
    const id = /getLearningOpportunity\('([0-9a-f-]{36})'\)/.exec(readFileSync(README, 'utf8'))?.[1];
    expect(id, 'a getLearningOpportunity call with a literal id').to.be.a('string');
    await resetCatalog();
    const key = await ensureDemo(testDb(), { dataDir, count: DEFAULT_CONFIG.demoSeedCount, logger: silentLogger });
    const res = await getJson(api, `/v1/learning-opportunities/${id}`, key);
    const newest = (
      (await getJson(api, '/v1/learning-opportunities?limit=1', key)).body as { results: { id: string }[] }
    ).results[0]?.id;
    expect(res.status, `GET ${id} on the demo catalog (its newest record is ${newest})`).to.equal(200);
  });
});
