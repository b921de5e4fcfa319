// GET /v1/events?view=: the change feed of a view. A copy built from it (upsert on PUBLISHED and
// UPDATED, remove on LEFT_VIEW, ARCHIVED and DELETED), started from the view's head and a walk of
// the view's list, equals a walk of the list after edits that move records in and out of the view;
// the view's feed is exactly what the evaluator (views/view.ts) makes of the whole feed; no event
// carries the data of a record outside the view; pages pass over events outside the view in bounded
// scans; cursors serve only their own feed; a long poll wakes on a matching change only.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { seededRandom } from '../../src/catalog/generate.ts';
import { encodeCursor, readCursor } from '../../src/feed/cursor.ts';
import { parseFeedArgs } from '../../src/feed/feed-query.ts';
import { VIEW_SCAN_MAX } from '../../src/feed/view-page.ts';
import { LEFT_VIEW_EVENT_TYPE, leftViewEventId } from '../../src/views/left-view.ts';
import { inView, parseView, viewDigest, viewEventKind, viewFacets } from '../../src/views/view.ts';
import { getJson } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { feedSettled } from '../support/feed-horizon.ts';
import { expectInvalidParams } from '../support/problem.ts';
import { type FeedEvent, type FeedResponse, until } from '../feed/feed-support.ts';
import { type OwnDatabase, startOnOwnDatabase } from './own-database.ts';

type Doc = Record<string, unknown> & { id: string; status: string };
type Event = FeedEvent & { resource: { type: string; id: string; version: number } };

const VIEW = 'format=IN_PERSON,HYBRID&country=de,AT';
const OTHER_VIEW = 'format=ONLINE';

describe('the change feed of a view (GET /v1/events?view=)', function () {
  this.timeout(180_000);
  let own: OwnDatabase;
  let api: Api;
  let key: string;
  const view = parseView(VIEW);

  before(async () => {
    own = await startOnOwnDatabase();
    ({ api, key } = own);
  });
  after(() => own?.close());

  const get = (path: string, init?: RequestInit) => getJson(api, path, key, init);
  const eventsPath = (query: Record<string, string | number>) =>
    `/v1/events?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`;
  async function feedPage(query: Record<string, string | number>): Promise<FeedResponse & { text: string }> {
    const res = await get(eventsPath(query));
    expect(res.status, res.text).to.equal(200);
    return { ...(res.body as FeedResponse), text: res.text };
  }
  async function headOf(viewText?: string): Promise<string> {
    await feedSettled(own.db.pool);
    const res = await get(`/v1/events/head${viewText ? `?view=${encodeURIComponent(viewText)}` : ''}`);
    expect(res.status, res.text).to.equal(200);
    return (res.body as { cursor: string }).cursor;
  }
  /** Every event readable now after `after` (of the view, or of the feed itself), following `next`. */
  async function follow(after: string, viewText: string | null, limit = 1000) {
    await feedSettled(own.db.pool);
    const events: Event[] = [];
    let pages = 0;
    for (;;) {
      const page = await feedPage({ after, limit, ...(viewText ? { view: viewText } : {}) });
      pages++;
      events.push(...(page.results as Event[]));
      after = page.pagination.next;
      if (!page.pagination.hasMore) return { events, next: after, pages };
    }
  }
  /** A walk of the list with this query string: id -> record. */
  async function walk(query: string): Promise<Map<string, Doc>> {
    const records = new Map<string, Doc>();
    for (let offset = 0; ; offset += 100) {
      const res = await get(`/v1/learning-opportunities?${query}&limit=100&offset=${offset}`);
      expect(res.status, res.text).to.equal(200);
      const body = res.body as { results: Doc[]; pagination: { hasMore: boolean } };
      for (const r of body.results) records.set(r.id, r);
      if (!body.pagination.hasMore) return records;
    }
  }

  it('builds a copy equal to a walk of the view, with exactly the events the evaluator derives from the whole feed', async () => {
    const pool = own.db.pool;
    await pool.query('delete from learning_opportunity');
    // Seeded records have no event: the view feed knows their state from the catalog (view_state).
    await seedCatalog(pool, { count: 120, seed: 4711, now: new Date(), batchSize: 60 });
    const rnd = seededRandom(20261219);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)]!;
    const docs = new Map<string, Doc>();
    for (const { doc } of (await pool.query<{ doc: string }>('select doc from learning_opportunity')).rows) {
      const d = JSON.parse(doc) as Doc;
      docs.set(d.id, d);
    }
    // A few of the view's own from the start.
    for (let i = 0; i < 10; i++) {
      const input = buildLearningOpportunityInput({ format: i % 2 ? 'HYBRID' : 'IN_PERSON' });
      await api.writes.upsert(parseLearningOpportunityInput(input));
      const d = JSON.parse(await api.writes.publish(input.id)) as Doc;
      docs.set(d.id, d);
    }

    const viewHead = await headOf(VIEW);
    const feedHead = await headOf();
    expect(readCursor(viewHead)!.view).to.equal(viewDigest(view));
    expect(readCursor(viewHead)!.position).to.deep.equal(readCursor(feedHead)!.position);
    const copy = await walk(VIEW);
    const everything = await walk('');
    expect(copy.size, 'records in the view at the start').to.be.above(5);

    // Edits that move records in and out of the view.
    const countries = ['DE', 'de', 'AT', 'at', 'FR', 'US', null];
    const write = async (d: Doc, change: Record<string, unknown>) => {
      const doc = await api.writes.upsert(parseLearningOpportunityInput({ ...d, ...change }));
      docs.set(d.id, JSON.parse(doc) as Doc);
    };
    let deleted = 0;
    for (let step = 0; step < 260; step++) {
      const d = pick([...docs.values()]);
      const r = rnd();
      if (r < 0.22) await write(d, { format: pick(['ONLINE', 'IN_PERSON', 'HYBRID']) });
      else if (r < 0.45) {
        const sessions = (d.sessions as Record<string, unknown>[]).map((s) => {
          const country = pick(countries);
          return { ...s, location: country === null ? null : { name: 'Hall', address: null, city: 'Town', country } };
        });
        await write(d, { sessions });
      } else if (r < 0.58 && d.status === 'PUBLISHED')
        docs.set(d.id, JSON.parse(await api.writes.archive(d.id)) as Doc);
      else if (r < 0.72 && d.status !== 'PUBLISHED') docs.set(d.id, JSON.parse(await api.writes.publish(d.id)) as Doc);
      else if (r < 0.78) {
        await api.writes.delete(d.id);
        docs.delete(d.id);
        deleted++;
      } else if (r < 0.9) {
        const input = buildLearningOpportunityInput({
          format: pick(['ONLINE', 'IN_PERSON', 'HYBRID']),
          sessions: buildLearningOpportunityInput().sessions,
        });
        (input.sessions as { location: { country: string } | null }[])[0]!.location!.country = pick(['DE', 'FR']);
        await api.writes.upsert(parseLearningOpportunityInput(input));
        const doc = rnd() < 0.8 ? await api.writes.publish(input.id) : null;
        if (doc) docs.set(input.id, JSON.parse(doc) as Doc);
        else docs.set(input.id, { ...input, status: 'DRAFT' } as Doc);
      } else await write(d, {}); // identical: no event
    }
    expect(deleted, 'deletions').to.be.above(3);

    const viewed = await follow(viewHead, VIEW);
    const small = await follow(viewHead, VIEW, 7);
    expect(small.events, 'pages of 7 hold the same events').to.deep.equal(viewed.events);
    expect(small.next).to.equal(viewed.next);

    // The copy, from the view's feed alone.
    const kinds = new Map<string, number>();
    for (const e of viewed.events) {
      kinds.set(e.type, (kinds.get(e.type) ?? 0) + 1);
      if (e.type === 'LEARNING_OPPORTUNITY_PUBLISHED' || e.type === 'LEARNING_OPPORTUNITY_UPDATED') {
        expect(inView(view, e.data), `${e.type} ${e.id}: data in the view`).to.equal(true);
        copy.set(e.resource.id, e.data as Doc);
      } else {
        expect(e.type).to.be.oneOf([
          LEFT_VIEW_EVENT_TYPE,
          'LEARNING_OPPORTUNITY_ARCHIVED',
          'LEARNING_OPPORTUNITY_DELETED',
        ]);
        expect(copy.has(e.resource.id), `${e.type} of a record the copy holds`).to.equal(true);
        if (e.type === LEFT_VIEW_EVENT_TYPE) expect(e.data).to.equal(null);
        copy.delete(e.resource.id);
      }
    }
    for (const type of [LEFT_VIEW_EVENT_TYPE, 'LEARNING_OPPORTUNITY_UPDATED', 'LEARNING_OPPORTUNITY_ARCHIVED'])
      expect(kinds.get(type) ?? 0, type).to.be.above(0);
    const listed = await walk(VIEW);
    expect([...copy.keys()].sort()).to.deep.equal([...listed.keys()].sort());
    expect(Object.fromEntries(copy)).to.deep.equal(Object.fromEntries(listed));

    // The same events, derived by the evaluator from the whole feed and the whole walk.
    const all = await follow(feedHead, null);
    const state = new Map<string, unknown>(everything);
    const expected: Event[] = [];
    for (const e of all.events) {
      const before = state.get(e.resource.id) ?? null;
      const afterState = e.type === 'LEARNING_OPPORTUNITY_DELETED' ? null : e.data;
      const kind = viewEventKind(view, e.type, viewFacets(before), viewFacets(afterState));
      if (kind === 'as-is') expected.push(e);
      if (kind === 'left')
        expected.push({ ...e, id: leftViewEventId(e.id, view), type: LEFT_VIEW_EVENT_TYPE, data: null });
      if (afterState === null) state.delete(e.resource.id);
      else state.set(e.resource.id, afterState);
    }
    expect(viewed.events).to.deep.equal(expected);
    expect(viewed.events.length).to.be.below(all.events.length);
    // LEFT_VIEW ids are never those of stored events, and the same on every read.
    const stored = new Set(all.events.map((e) => e.id));
    for (const e of viewed.events) if (e.type === LEFT_VIEW_EVENT_TYPE) expect(stored.has(e.id)).to.equal(false);
    expect((await follow(viewHead, VIEW)).events).to.deep.equal(viewed.events);
    // The same view in another spelling is the same feed, cursors included.
    const respelled = await follow(viewHead, 'country=AT,DE&format=HYBRID,IN_PERSON');
    expect(respelled.events).to.deep.equal(viewed.events);
  });

  it('passes over events outside the view in bounded scans: next moves on, hasMore while events remain', async () => {
    const pool = own.db.pool;
    const start = await headOf(VIEW);
    // Events of records never in the view (deletions of ids never seen), three scans' worth.
    const outside = VIEW_SCAN_MAX * 2 + 500;
    for (let done = 0; done < outside; done += 2000)
      await pool.query(
        `insert into event (id, type, resource_id, occurred_at, body)
         select g.id, 'LEARNING_OPPORTUNITY_DELETED', g.rid, now(),
                '{"id":"' || g.id || '","type":"LEARNING_OPPORTUNITY_DELETED","occurredAt":"2026-01-01T00:00:00.000Z","resource":{"type":"LEARNING_OPPORTUNITY","id":"' || g.rid || '","version":1},"data":null}'
           from (select gen_random_uuid() as id, gen_random_uuid() as rid from generate_series(1, $1)) g`,
        [Math.min(2000, outside - done)],
      );
    const input = buildLearningOpportunityInput({ format: 'IN_PERSON' });
    await api.writes.upsert(parseLearningOpportunityInput(input));
    await api.writes.publish(input.id);

    await feedSettled(pool);
    const began = Date.now();
    const first = await feedPage({ after: start, limit: 10, view: VIEW, wait: 20 });
    expect(Date.now() - began, 'a page that passed over events answers at once, even with wait').to.be.below(5000);
    expect(first.results).to.deep.equal([]);
    expect(first.pagination.hasMore).to.equal(true);
    expect(first.pagination.next).to.not.equal(start);
    expect(first.pagination.after).to.equal(start);
    const rest = await follow(first.pagination.next, VIEW, 10);
    expect(rest.pages, 'pages to pass over the events outside the view').to.be.at.least(2);
    expect(rest.events.map((e) => [e.type, e.resource.id])).to.deep.equal([
      ['LEARNING_OPPORTUNITY_PUBLISHED', input.id],
    ]);
    // At the end: nothing more, and the cursor stays.
    const end = await feedPage({ after: rest.next, view: VIEW });
    expect(end.results).to.deep.equal([]);
    expect(end.pagination).to.include({ next: rest.next, hasMore: false });
  });

  it('binds cursors to their feed: another view, the feed itself, and a view cursor without its view are 400 naming after', async () => {
    const viewCursor = await headOf(VIEW);
    const otherCursor = await headOf(OTHER_VIEW);
    const plainCursor = await headOf();
    expect(viewCursor).to.not.equal(plainCursor);
    expect(viewCursor.length).to.be.at.most(64);
    const refused: [Record<string, string>, string[]][] = [
      [{ after: otherCursor, view: VIEW }, ['after']],
      [{ after: plainCursor, view: VIEW }, ['after']],
      [{ after: viewCursor }, ['after']],
      [{ after: viewCursor, view: OTHER_VIEW }, ['after']],
      [{ after: viewCursor, view: 'format=ONLINE&sort=updatedAt' }, ['view']],
      [{ view: 'limit=5' }, ['view']],
      [{ view: '' }, ['view']],
      [{ view: 'format=PODCAST', limit: '0' }, ['view', 'limit']],
    ];
    for (const [query, names] of refused) {
      const res = await get(eventsPath(query));
      const body = expectInvalidParams(res, names);
      if (names.includes('view') && query.view)
        expect(body.invalidParams![0]!.reason).to.match(/^(sort|limit|format) /);
    }
    expectInvalidParams(await get(`/v1/events?view=format%3DONLINE&view=format%3DHYBRID`), ['view']);
    expectInvalidParams(await get(`/v1/events/head?view=${encodeURIComponent('colour=red')}`), ['view']);
    // The same view in any spelling takes the cursor; the feed's own cursors keep working without a view.
    expect(
      (await get(eventsPath({ after: viewCursor, view: 'country=AT,de&format=HYBRID,IN_PERSON' }))).status,
    ).to.equal(200);
    expect((await get(eventsPath({ after: plainCursor }))).status).to.equal(200);
    expect(() => parseFeedArgs({ after: viewCursor })).to.throw(/after/);
    // Cursors of a view carry its digest; a position ahead of the feed is refused for a view too.
    expectInvalidParams(
      await get(
        eventsPath({ after: encodeCursor({ xid: String(2n ** 62n), position: '1' }, viewDigest(view)), view: VIEW }),
      ),
      ['after'],
    );
  });

  it('answers a view page with an ETag of its own, and 304 for the page held', async () => {
    const start = await headOf(VIEW);
    const input = buildLearningOpportunityInput({ format: 'HYBRID' });
    await api.writes.upsert(parseLearningOpportunityInput(input));
    await api.writes.publish(input.id);
    await feedSettled(own.db.pool); // else the second read may see the publish the first was held back from
    const path = eventsPath({ after: start, view: VIEW });
    const first = await get(path);
    expect(first.status).to.equal(200);
    const etag = first.headers.get('etag')!;
    expect((await get(path, { headers: { 'if-none-match': etag } })).status).to.equal(304);
    const other = await get(eventsPath({ after: await headOf(OTHER_VIEW), view: OTHER_VIEW }));
    expect(other.headers.get('etag')).to.not.equal(etag);
  });

  it('wakes a long poll on a change in the view, not on others', async () => {
    const start = await headOf(VIEW);
    let answered = false;
    const waiting = feedPage({ after: start, view: VIEW, wait: 25 }).then((page) => {
      answered = true;
      return page;
    });
    await until(() => api.feed.waiters.waiting() === 1);
    // Outside the view: the request wakes, reads, finds nothing of its own and waits on.
    const online = buildLearningOpportunityInput({ format: 'ONLINE', id: randomUUID() });
    await api.writes.upsert(parseLearningOpportunityInput(online));
    await api.writes.publish(online.id);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(answered, 'answered by a change outside the view').to.equal(false);
    const inside = buildLearningOpportunityInput({ format: 'IN_PERSON' });
    await api.writes.upsert(parseLearningOpportunityInput(inside));
    const changedAt = Date.now();
    await api.writes.publish(inside.id);
    const page = await waiting;
    expect(Date.now() - changedAt).to.be.below(15_000);
    expect(page.results.map((e) => [e.type, e.resource.id])).to.deep.equal([
      ['LEARNING_OPPORTUNITY_PUBLISHED', inside.id],
    ]);
    expect(page.pagination.after).to.equal(start);
    expect(readCursor(page.pagination.next)!.view).to.equal(viewDigest(view));
  });
});

describe("a view's feed pages within PAGE_MAX_BYTES", function () {
  this.timeout(60_000);
  let own: OwnDatabase;
  let api: Api;
  let key: string;
  before(async () => {
    own = await startOnOwnDatabase({ http: { pageMaxBytes: 1024 * 1024 } });
    ({ api, key } = own);
  });
  after(() => own?.close());

  it('stops a page early with hasMore, and a walk returns every event of the view once', async () => {
    await feedSettled(own.db.pool);
    const start = (
      (await getJson(api, `/v1/events/head?view=${encodeURIComponent(VIEW)}`, key)).body as { cursor: string }
    ).cursor;
    const inside: string[] = [];
    // ~150 KB each, in the view and out of it by turns: six fit in a page.
    for (let i = 0; i < 16; i++) {
      const faqs = [1, 2].map((n) => ({ id: randomUUID(), question: `Q${n}?`, answer: 'a'.repeat(50_000) }));
      const input = buildLearningOpportunityInput({
        format: i % 2 ? 'ONLINE' : 'IN_PERSON',
        description: 'd'.repeat(50_000),
        faqs,
      });
      await api.writes.upsert(parseLearningOpportunityInput(input));
      await api.writes.publish(input.id);
      if (i % 2 === 0) inside.push(input.id);
    }
    await feedSettled(own.db.pool);
    const events: Event[] = [];
    let after = start;
    let pages = 0;
    for (;;) {
      const res = await getJson(api, `/v1/events?after=${after}&limit=1000&view=${encodeURIComponent(VIEW)}`, key);
      expect(res.status).to.equal(200);
      expect(Buffer.byteLength(res.text)).to.be.at.most(1024 * 1024);
      const page = res.body as FeedResponse;
      pages++;
      events.push(...(page.results as Event[]));
      after = page.pagination.next;
      if (!page.pagination.hasMore) break;
      expect(page.results.length, 'a page stopped by its bytes').to.be.above(0);
    }
    expect(pages).to.be.at.least(2);
    expect(events.map((e) => e.resource.id)).to.deep.equal(inside);
    expect(new Set(events.map((e) => e.id)).size).to.equal(events.length);
  });
});
