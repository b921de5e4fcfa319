// The nightly full walk: paging rules, de-duplication when records move between pages mid-walk
// (fake /v1 servers on real HTTP), and the walk against the real service.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { type CatalogClient, createCatalogClient, walk } from '@lods/client';
import type { Api } from '../../src/app/service.ts';
import { createTestKey, startTestApi } from '../support/api.ts';
import { buildLearningOpportunityInput, createRecord, resetCatalog } from '../support/factories.ts';
import { fakeRecord, inListOrder, type ScriptedServer, startFakeCatalog } from './fake-servers.ts';

const at = (minute: number) => `2026-05-01T10:${String(minute).padStart(2, '0')}:00.000Z`;
const pagesRequested = (server: ScriptedServer) =>
  server.requests.map((r) => new URL(r.url, 'http://x').searchParams.get('offset'));
const clientFor = (url: string, apiKey = 'test-key'): CatalogClient =>
  createCatalogClient({ baseUrl: url, apiKey, minRetryDelayMs: 5 });

/** Each list request as "offset updatedBefore updatedSince". */
const askedOf = (server: { requests: { url: string }[] }) =>
  server.requests.map((r) => {
    const p = new URL(r.url, 'http://x').searchParams;
    return `${p.get('offset')} ${p.get('updatedBefore')} ${p.get('updatedSince')}`;
  });

describe('walk over a fake /v1', () => {
  let server: ScriptedServer | null = null;
  afterEach(async () => {
    await server?.close();
    server = null;
  });

  it('steps offset by limit and stops when offset + page size reaches totalCount', async () => {
    const records = inListOrder(Array.from({ length: 7 }, (_, i) => fakeRecord(randomUUID(), at(i))));
    server = await startFakeCatalog(() => records);
    const progress: number[] = [];
    const result = await walk({
      client: clientFor(server.url),
      limit: 3,
      onProgress: (p) => progress.push(p.received),
    });
    expect(pagesRequested(server)).to.deep.equal(['0', '3', '6']);
    expect(result).to.include({ count: 7, pages: 3, received: 7, duplicates: 0, highestUpdatedAt: at(6) });
    expect([...result.records.keys()]).to.have.members(records.map((r) => r.id));
    expect(progress).to.deep.equal([3, 6, 7]);
  });

  it('keyset: a record removed above the walk moves no record past it, and records of one instant span pages', async () => {
    // A10 B9 C8 D8 E8 F8 G7 H6 (C..F share an instant, ordered by id descending); A leaves the list
    // after page 1. By offset, page 2 would start at E (D missed); by keyset it goes on after C.
    const ids = Array.from({ length: 8 }, () => randomUUID());
    const [a, b, c, d, e, f, g, h] = [10, 9, 8, 8, 8, 8, 7, 6].map((m, i) => fakeRecord(ids[i]!, at(m)));
    const sameInstant = inListOrder([c!, d!, e!, f!]);
    let list = [a!, b!, ...sameInstant, g!, h!];
    server = await startFakeCatalog((n) => {
      if (n === 1) list = list.filter((r) => r.id !== a!.id);
      return list;
    });
    const result = await walk({ client: clientFor(server.url), limit: 3, keyset: true });
    const justAfter8 = new Date(Date.parse(at(8)) + 1).toISOString();
    // Page 2 skips the one record of that instant read on page 1; page 3 the four read by then;
    // then the instant, which spanned pages, is read again whole (two pages of it).
    expect(askedOf(server)).to.deep.equal([
      '0 null null',
      `1 ${justAfter8} null`,
      `4 ${justAfter8} null`,
      `0 ${justAfter8} ${at(8)}`,
      `3 ${justAfter8} ${at(8)}`,
    ]);
    expect([...result.records.keys()]).to.have.members(ids);
    expect(result.duplicates).to.equal(4);
  });

  it('keyset: a record of one instant removed while the walk pages through that instant makes it skip none', async () => {
    // Ten records of one instant (a bulk publish), read 3 at a time by offset. After page 1 two of
    // the three read are removed: by offset alone, page 2 starts two records too far down and those
    // two are never read (no event brings an unchanged record back). Read again whole, they are.
    const ids = Array.from({ length: 10 }, () => randomUUID());
    let list = inListOrder(ids.map((id) => fakeRecord(id, at(5))));
    const firstPage = list.slice(0, 3).map((r) => r.id);
    server = await startFakeCatalog((n) => {
      if (n === 2) list = list.filter((r) => r.id !== firstPage[0] && r.id !== firstPage[1]);
      return list;
    });
    const result = await walk({ client: clientFor(server.url), limit: 3, keyset: true });
    const present = list.map((r) => r.id);
    expect([...result.records.keys()]).to.include.members(present);
    // The removed two were read before they went: the feed after the walk removes them (sync).
    expect(result.count).to.equal(10);
  });

  it('de-duplicates when an update mid-walk shifts records down a page (each id once, later copy kept)', async () => {
    // A5 B4 C3 D2 E1; after page 1 (A, B), C is updated: it moves to the top and B slides onto page 2.
    const [a, b, c, d, e] = [5, 4, 3, 2, 1].map((m) => fakeRecord(randomUUID(), at(m)));
    let list = [a!, b!, c!, d!, e!];
    server = await startFakeCatalog((n) => {
      if (n === 1)
        list = inListOrder([...list.filter((r) => r.id !== c!.id), { ...c!, title: 'C updated', updatedAt: at(9) }]);
      return list;
    });
    const result = await walk({ client: clientFor(server.url), limit: 2 });
    expect(pagesRequested(server)).to.deep.equal(['0', '2', '4']);
    expect(result.received).to.equal(5);
    expect(result.duplicates).to.equal(1);
    // C moved to a page already read: this walk misses it (best effort, SPEC 4.1); the next one sees it.
    expect([...result.records.keys()]).to.have.members([a!.id, b!.id, d!.id, e!.id]);
    expect(result.index.get(b!.id)!.seq).to.equal(2); // the copy seen on page 2 (equal updatedAt: later copy)
    expect(result.highestUpdatedAt).to.equal(a!.updatedAt);

    const again = await walk({ client: clientFor(server.url), limit: 2 });
    expect(again.records.get(c!.id)?.title).to.equal('C updated');
    expect(again.highestUpdatedAt).to.equal(at(9));
  });

  it('keeps the latest copy by updatedAt even when a stale copy arrives later (a lagging read replica)', async () => {
    // The primary has W updated at :10; a lagging replica still has W at :06. Pages alternate between them.
    const [x, y, z] = [9, 8, 7].map((m) => fakeRecord(randomUUID(), at(m)));
    const wOld = fakeRecord(randomUUID(), at(6), 'W before');
    const wNew = { ...wOld, title: 'W after', updatedAt: at(10) };
    const primary = inListOrder([wNew, x!, y!, z!]);
    const replica = inListOrder([wOld, x!, y!, z!]);
    server = await startFakeCatalog((n) => (n % 2 === 0 ? primary : replica));
    const result = await walk({ client: clientFor(server.url), limit: 2 });
    // page 1 (primary): W', X; page 2 (replica): Z, W.
    expect(result.received).to.equal(4);
    expect(result.records.get(wOld.id)).to.deep.equal(wNew);
    expect(result.index.get(wOld.id)).to.deep.equal({ updatedAt: at(10), seq: 0 });
    expect(result.highestUpdatedAt).to.equal(at(10));
    expect(result.count).to.equal(result.records.size).and.to.equal(3);
  });

  it('stops on an empty page even when totalCount promises more', async () => {
    const records = inListOrder(Array.from({ length: 3 }, (_, i) => fakeRecord(randomUUID(), at(i))));
    server = await startFakeCatalog(() => records, { totalCountFor: () => 1000 });
    const result = await walk({ client: clientFor(server.url), limit: 2 });
    expect(pagesRequested(server)).to.deep.equal(['0', '2', '4']);
    expect(result).to.include({ count: 3, pages: 3 });
  });

  it('walks an empty catalog in one request and reports no watermark', async () => {
    server = await startFakeCatalog(() => []);
    const result = await walk({ client: clientFor(server.url) });
    expect(server.requests.map((r) => r.url)).to.deep.equal(['/v1/learning-opportunities?limit=100&offset=0']);
    expect(result).to.include({ count: 0, pages: 1, highestUpdatedAt: null });
  });

  it('with keepRecords: false keeps only the index and hands every page to onPage with sequence numbers', async () => {
    const records = inListOrder(Array.from({ length: 5 }, (_, i) => fakeRecord(randomUUID(), at(i))));
    server = await startFakeCatalog(() => records);
    const seen: [string, number][] = [];
    const result = await walk({
      client: clientFor(server.url),
      limit: 2,
      keepRecords: false,
      onPage: (page, first) => page.forEach((r, i) => seen.push([r.id, first + i])),
    });
    expect(result.records.size).to.equal(0);
    expect(seen).to.deep.equal(records.map((r, i) => [r.id, i]));
    expect([...result.index.entries()].map(([id, e]) => [id, e.seq])).to.have.deep.members(seen);
  });
});

describe('walk against the real service', () => {
  let api: Api;
  let key: string;
  let published: (Record<string, unknown> & { id: string; updatedAt: string })[];

  beforeEach(async () => {
    await resetCatalog();
    api = await startTestApi();
    key = await createTestKey(['catalog:read']);
    published = [];
    for (let i = 0; i < 7; i++) published.push(await createRecord(api.writes, { title: `Walk ${i}` }));
    await createRecord(api.writes, { title: 'A draft' }, { publish: false });
    const archived = await createRecord(api.writes, { title: 'Archived' });
    await api.writes.archive(archived.id);
  });
  afterEach(() => api.close());

  it('returns every published record exactly once, as GET serves it, and the highest updatedAt', async () => {
    const result = await walk({ client: clientFor(api.url, key), limit: 3 });
    expect(result).to.include({ count: 7, pages: 3, received: 7, duplicates: 0 });
    expect([...result.records.keys()]).to.have.members(published.map((r) => r.id));
    for (const record of published) expect(result.records.get(record.id)).to.deep.equal(record);
    expect(result.highestUpdatedAt).to.equal(
      published
        .map((r) => r.updatedAt)
        .sort()
        .at(-1),
    );
  });

  it('survives an update during the walk: no id twice, and the next walk has the new copy', async () => {
    const oldest = published[0]!; // created first: on the last page
    let pages = 0;
    // Updates the oldest record right after the first page has been answered.
    const fetchThenUpdate: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (++pages === 1)
        await api.writes.upsert(
          parseLearningOpportunityInput(buildLearningOpportunityInput({ id: oldest.id, title: 'Updated mid-walk' })),
        );
      return response;
    };
    const client = createCatalogClient({ baseUrl: api.url, apiKey: key, fetch: fetchThenUpdate });
    const result = await walk({ client, limit: 3 });
    expect(result.duplicates).to.equal(1);
    expect(result.count).to.equal(6);
    expect(result.records.has(oldest.id)).to.equal(false);

    const next = await walk({ client: clientFor(api.url, key), limit: 3 });
    expect(next.count).to.equal(7);
    expect(next.records.get(oldest.id)?.title).to.equal('Updated mid-walk');
    expect(next.highestUpdatedAt).to.equal(next.records.get(oldest.id)?.updatedAt);
  });
});
