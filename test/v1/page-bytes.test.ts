// Page bytes are bounded (PAGE_MAX_BYTES): a REST list page and a change-feed page over big records
// stop before the record that would pass the bound, with `next` and `hasMore` saying where to go on.
// A walk of either returns every record (event) exactly once, and no page is above the bound.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createCatalogClient, walk } from '@lods/client';
import type { Api } from '../../src/app/service.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { collect, type FeedResponse, head, startFeedApi } from '../feed/feed-support.ts';

const PAGE_MAX_BYTES = 1024 * 1024; // the smallest the setting takes
const BIG = 14;
type ListBody = {
  results: { id: string }[];
  pagination: { totalCount: number; limit: number; offset: number; next: number; hasMore: boolean };
};

describe('page byte bound (PAGE_MAX_BYTES)', function () {
  this.timeout(60_000);
  let api: Api;
  let key: string;
  let start: string;
  const big: string[] = [];

  before(async () => {
    ({ api } = await startFeedApi({ http: { pageMaxBytes: PAGE_MAX_BYTES } }));
    key = await createTestKey(['catalog:read'], testDb(), 1_000_000);
    start = await head(api, key);
    // ~150 KB each: six fit in a 1 MiB page, a page of 100 would be 2 MB.
    for (let i = 0; i < BIG; i++) {
      const faqs = [1, 2].map((n) => ({ id: randomUUID(), question: `Q${n}?`, answer: 'a'.repeat(50_000) }));
      big.push((await createRecord(api.writes, { description: 'd'.repeat(50_000), faqs })).id);
    }
    await createRecord(api.writes); // and a small one
  });
  after(() => api.close());

  it('a list walk at limit=100 returns every record exactly once, in pages under the bound that stop early with next and hasMore', async () => {
    const seen: string[] = [];
    const sizes: number[] = [];
    let short = 0;
    let totalCount: number | undefined;
    for (let offset = 0; ;) {
      const res = await getJson(api, `/v1/learning-opportunities?limit=100&offset=${offset}`, key);
      expect(res.status).to.equal(200);
      const { results, pagination } = res.body as ListBody;
      sizes.push(Buffer.byteLength(res.text));
      expect(Number(res.headers.get('content-length'))).to.equal(Buffer.byteLength(res.text));
      expect(pagination.next).to.equal(offset + results.length);
      expect(pagination.hasMore).to.equal(pagination.next < pagination.totalCount);
      if (pagination.hasMore && results.length < 100) short++;
      seen.push(...results.map((r) => r.id));
      totalCount = pagination.totalCount;
      if (!pagination.hasMore) break;
      offset = pagination.next;
    }
    expect(new Set(seen).size, 'no record twice').to.equal(seen.length);
    expect(seen).to.have.length(totalCount!);
    expect(seen).to.include.members(big);
    expect(Math.max(...sizes), `page sizes ${sizes.join(', ')}`).to.be.at.most(PAGE_MAX_BYTES);
    expect(short, 'pages that stopped early').to.be.at.least(2);
  });

  it("the client's walk follows next: every record once", async () => {
    const result = await walk({ client: createCatalogClient({ baseUrl: api.url, apiKey: key }), limit: 100 });
    expect(result.duplicates).to.equal(0);
    expect([...result.index.keys()]).to.include.members(big);
    expect(result.pages).to.be.at.least(3);
  });

  it('a feed walk at limit=1000 returns every event exactly once, in pages under the bound that stop early with hasMore', async () => {
    // The events of the big records (their creation and publication).
    const { rows } = await testDb().pool.query<{ id: string }>(
      'select id from event where resource_id = any($1::uuid[])',
      [big],
    );
    expect(rows.length).to.be.at.least(BIG);
    // Until all are readable (another test's open transaction on the same server can hold them back a moment).
    await collect(api, key, start, rows.length);
    const events: FeedResponse['results'] = [];
    const sizes: number[] = [];
    let short = 0;
    for (let after = start; ;) {
      const res = await getJson(api, `/v1/events?after=${after}&limit=1000`, key);
      expect(res.status).to.equal(200);
      const page = res.body as FeedResponse;
      sizes.push(Buffer.byteLength(res.text));
      if (page.pagination.hasMore && page.results.length < 1000) short++;
      events.push(...page.results);
      after = page.pagination.next;
      if (!page.pagination.hasMore) break;
    }
    const ids = events.map((e) => e.id);
    expect(new Set(ids).size, 'no event twice').to.equal(ids.length);
    expect(ids).to.include.members(rows.map((r) => r.id));
    expect(Math.max(...sizes), `page sizes ${sizes.join(', ')}`).to.be.at.most(PAGE_MAX_BYTES);
    expect(short, 'pages that stopped early').to.be.at.least(2);
  });
});
