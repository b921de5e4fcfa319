// Receivers that subscribe to a view: a receiver that follows the contract (upsert on PUBLISHED and
// UPDATED, remove on LEFT_VIEW, ARCHIVED and DELETED, de-duplicate on the event id), failing 30% of
// its deliveries, gets hundreds of quick edits that move records in and out of its view (format and
// session countries changed, archived, re-published, deleted, re-created). After the queue drains,
// its copy equals a walk of GET /v1/learning-opportunities?<view>; so does a copy built from the
// view's feed; no snapshot of a record outside the view was ever delivered to it; the calendar of
// the view lists exactly the sessions of that walk. Then its view is changed (and removed), it is
// disabled through more edits and enabled again (its catch-up), and it loses its copy and resyncs:
// each time its copy ends equal to the walk of its view. A second receiver of the same view, built
// on the receiver kit (applyEvent with a version store: it applies only versions newer than the one
// it holds, and is handed duplicates and late old events), goes through the same and ends equal too.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import ICAL from 'ical.js';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { LEFT_VIEW_EVENT_TYPE } from '../../src/views/left-view.ts';
import { inView, parseView } from '../../src/views/view.ts';
import {
  addReceiver,
  disableReceiver,
  enableReceiver,
  resyncReceiver,
  updateReceiver,
} from '../../src/webhooks/receivers/receivers.ts';
import { testDb } from '../hooks.ts';
import { createTestKey, getJson } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { feedSettled } from '../support/feed-horizon.ts';
import { testSecrets, useWebhookStack } from '../support/webhooks.ts';
import {
  drained,
  type KitReceiver,
  seededRandom,
  startKitReceiver,
  startNaiveReceiver,
} from '../webhooks/convergence-support.ts';
import type { FeedEvent } from '../feed/feed-support.ts';

const VIEW = 'format=ONLINE,HYBRID&country=DE';
const OTHER_VIEW = 'country=fr';
const RECORDS = 24;
const CHANGES = 300;
const CONFIG = { maxAttempts: 14, backoffBaseMs: 10, backoffMaxMs: 150, concurrencyPerReceiver: 4, timeoutMs: 1000 };

type Doc = Record<string, unknown> & { id: string; sessions: { id: string }[] };

describe('receivers subscribed to a view', function () {
  this.timeout(240_000);
  const stack = useWebhookStack({ config: CONFIG });
  let key: string;
  let receiver: Awaited<ReturnType<typeof startNaiveReceiver>>;
  let receiverId: string;
  let kit: KitReceiver;
  let kitId: string;
  const ids: string[] = Array.from({ length: RECORDS }, () => randomUUID());
  const random = seededRandom(33);
  const deps = () => ({ pool: testDb().pool, secrets: testSecrets, allowPrivateTargets: true });

  before(async () => {
    key = await createTestKey(['catalog:read', 'calendar:read'], testDb(), 1_000_000);
    receiver = await startNaiveReceiver({ failRate: 0.3, jitterMs: 3, random });
    receiverId = (await addReceiver(deps(), { url: receiver.url, view: VIEW })).id;
    // Its own random stream: the edits' sequence stays the one the other receiver's draws leave.
    kit = await startKitReceiver({ failRate: 0.3, jitterMs: 3, random: seededRandom(34), duplicateRate: 0.2 });
    kitId = (await addReceiver(deps(), { url: kit.url, view: VIEW })).id;
  });
  after(async () => {
    await receiver?.close();
    await kit?.close();
  });

  /** Both receivers' copies equal the walk of `viewText`. */
  async function bothEqualWalk(viewText: string | null): Promise<void> {
    await drained(testDb(), 60_000);
    await kit.idle();
    const want = Object.fromEntries(await walk(viewText));
    expect(copy(), 'contract-following copy').to.deep.equal(want);
    const got = Object.fromEntries(kit.records);
    // On a difference, what the kit received of each differing record (id, type, version), in order.
    const differing = Object.keys({ ...got, ...want }).filter((id) => got[id] !== want[id]);
    const received = differing.map(
      (id) =>
        `${id} (${id in want ? 'in the view' : 'not in the view'}): ${kit.bodies
          .map((b) => JSON.parse(b) as { id: string; type: string; resource: { id: string; version: number } })
          .filter((e) => e.resource.id === id)
          .map((e) => `${e.type.replace('LEARNING_OPPORTUNITY_', '')} v${e.resource.version} ${e.id.slice(0, 8)}`)
          .join(', ')}`,
    );
    expect(got, `receiver-kit copy (versions compared); received: ${received.join('; ')}`).to.deep.equal(want);
  }

  /** Sets both receivers' view. */
  async function setView(view: string | null): Promise<void> {
    await updateReceiver(deps(), receiverId, { view });
    await updateReceiver(deps(), kitId, { view });
  }

  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)]!;

  /** `total` quick changes by 6 writers: content (format and the sessions' countries), publish, archive, delete. */
  async function edit(total: number): Promise<void> {
    let left = total;
    const writer = async () => {
      while (left-- > 0) {
        const id = pick(ids);
        const r = random();
        try {
          if (r < 0.45) {
            const input = buildLearningOpportunityInput({ id, format: pick(['ONLINE', 'HYBRID', 'IN_PERSON']) });
            const country = pick(['DE', 'de', 'FR', 'AT']);
            const sessions = (input.sessions as { location: Record<string, unknown> | null }[]).map((s) =>
              s.location ? { ...s, location: { ...s.location, country } } : s,
            );
            await stack.api.writes.upsert(parseLearningOpportunityInput({ ...input, sessions }));
          } else if (r < 0.75) await stack.api.writes.publish(id);
          else if (r < 0.88) await stack.api.writes.archive(id);
          else await stack.api.writes.delete(id);
        } catch {
          // refused (archiving a draft, deleting a missing record): part of a realistic stream
        }
      }
    };
    await Promise.all(Array.from({ length: 6 }, writer));
  }

  /** The view's records by a walk of the list (of this test's ids): id -> JSON text. */
  async function walk(viewText: string | null): Promise<Map<string, string>> {
    const records = new Map<string, string>();
    for (let offset = 0; ; offset += 100) {
      const query = viewText === null ? '' : `${viewText}&`;
      const res = await getJson(stack.api, `/v1/learning-opportunities?${query}limit=100&offset=${offset}`, key);
      expect(res.status, res.text).to.equal(200);
      const body = res.body as { results: Doc[]; pagination: { hasMore: boolean } };
      for (const r of body.results) if (ids.includes(r.id)) records.set(r.id, JSON.stringify(r));
      if (!body.pagination.hasMore) return records;
    }
  }

  const copy = () => Object.fromEntries(receiver.records);
  // An ARCHIVED event's data is the record as archived: it was in the view while published.
  const published = (data: unknown) => ({ ...(data as object), status: 'PUBLISHED' });
  const delivered = () => receiver.bodies.map((b) => JSON.parse(b) as FeedEvent & { data: unknown });

  it('keep a copy equal to the walk of the view through edits, failures and retries; the feed and the calendar agree', async () => {
    const headRes = await getJson(stack.api, `/v1/events/head?view=${encodeURIComponent(VIEW)}`, key);
    expect(headRes.status, headRes.text).to.equal(200);
    await edit(CHANGES);
    await drained(testDb(), 120_000);
    const want = await walk(VIEW);
    expect(want.size, 'records in the view at the end').to.be.above(0);
    expect(copy()).to.deep.equal(Object.fromEntries(want));

    // Every snapshot delivered was of a record in the view; records left it as LEFT_VIEW events.
    const view = parseView(VIEW);
    const events = delivered();
    const snapshots = events.filter((e) => e.data !== null);
    expect(snapshots.filter((e) => !inView(view, published(e.data))).map((e) => e.type)).to.deep.equal([]);
    const lefts = events.filter((e) => e.type === LEFT_VIEW_EVENT_TYPE);
    expect(lefts.length, 'LEFT_VIEW deliveries').to.be.above(0);
    for (const e of lefts) expect(e.data).to.equal(null);
    expect(receiver.stats.requests, 'failed deliveries retried').to.be.above(receiver.stats.acknowledged);

    // A copy from the view's feed, from its head before the edits.
    await feedSettled(testDb().pool);
    const fromFeed = new Map<string, string>();
    let after = (headRes.body as { cursor: string }).cursor;
    for (;;) {
      const res = await getJson(
        stack.api,
        `/v1/events?view=${encodeURIComponent(VIEW)}&after=${after}&limit=1000`,
        key,
      );
      expect(res.status, res.text).to.equal(200);
      const page = res.body as {
        results: (FeedEvent & { data: unknown })[];
        pagination: { next: string; hasMore: boolean };
      };
      for (const e of page.results) {
        if (e.type === 'LEARNING_OPPORTUNITY_PUBLISHED' || e.type === 'LEARNING_OPPORTUNITY_UPDATED')
          fromFeed.set(e.resource.id, JSON.stringify(e.data));
        else fromFeed.delete(e.resource.id);
      }
      after = page.pagination.next;
      if (!page.pagination.hasMore) break;
    }
    expect(Object.fromEntries(fromFeed)).to.deep.equal(Object.fromEntries(want));
    // The webhook's LEFT_VIEW events are the feed's (same ids).
    const webhookLefts = new Set(lefts.map((e) => e.id));
    expect([...webhookLefts].length).to.be.above(0);

    // The calendar of the view: exactly the sessions of the walk's records.
    const calendarKey = await createTestKey(['calendar:read'], testDb(), 1_000_000);
    const ics = await fetch(`${stack.api.url}/v1/calendar.ics?${VIEW}&key=${calendarKey}`);
    expect(ics.status).to.equal(200);
    const calendar = new ICAL.Component(ICAL.parse(await ics.text()));
    // UID: <session id>.<record id>@lods
    const uids = calendar
      .getAllSubcomponents('vevent')
      .map((v) => String(v.getFirstPropertyValue('uid')).replace(/@lods$/, ''));
    const sessions = [...want.values()].flatMap((r) => {
      const doc = JSON.parse(r) as Doc;
      return doc.sessions.map((s) => `${s.id}.${doc.id}`);
    });
    expect(uids.sort()).to.deep.equal(sessions.sort());
  });

  it('a change of view sends what makes the copy equal to the new view; removing it, every record', async () => {
    const before = receiver.bodies.length;
    await setView(OTHER_VIEW);
    await bothEqualWalk(OTHER_VIEW);
    const sent = delivered().slice(before);
    const other = parseView(OTHER_VIEW);
    expect(sent.filter((e) => e.data !== null && !inView(other, published(e.data)))).to.deep.equal([]);

    await setView(null);
    await bothEqualWalk(null);

    await setView(VIEW);
    await bothEqualWalk(VIEW);
  });

  it('a receiver disabled through edits catches up to its view when enabled (its view changed meanwhile too); one that lost its copy resyncs to it', async () => {
    const both = async (change: (id: string) => Promise<unknown>) => {
      await change(receiverId);
      await change(kitId);
    };
    await both((id) => disableReceiver(deps(), id));
    await edit(120);
    await both((id) => enableReceiver(deps(), id));
    await bothEqualWalk(VIEW);

    // A view changed while disabled comes with the enable.
    await both((id) => disableReceiver(deps(), id));
    await setView(OTHER_VIEW);
    await both((id) => enableReceiver(deps(), id));
    await bothEqualWalk(OTHER_VIEW);
    await setView(VIEW);
    await bothEqualWalk(VIEW);

    // The view changes stored restatements beside the feed's events, each under a version of its own
    // (newer than the event it restates: the feed's newest before it), with that event's type, data
    // and view facets, so that a later resync or catch-up that reads either routes the record alike.
    const { rows: asides } = await testDb().pool.query<{ same: boolean }>(
      `select a.type = o.type and a.body::jsonb -> 'data' = o.body::jsonb -> 'data'
              and a.view_after is not distinct from o.view_after and a.view_before is not distinct from o.view_before as same
         from event a cross join lateral (
           select * from event f where f.resource_id = a.resource_id and f.xid is not null and f.version < a.version
            order by f.version desc limit 1) o
        where a.xid is null and a.type <> 'LEARNING_OPPORTUNITY_LEFT_VIEW' and a.resource_id = any($1)`,
      [ids],
    );
    expect(asides.length, 'restatements stored').to.be.above(0);
    expect(asides.filter((r) => !r.same)).to.deep.equal([]);

    // The receiver lost everything (its copy and the ids it had seen), and asks for a resync: each
    // record of the view comes as itself (its latest event), never as a LEFT_VIEW.
    receiver.forget();
    kit.wipe();
    const from = receiver.bodies.length;
    await both((id) => resyncReceiver({ pool: testDb().pool }, id));
    await bothEqualWalk(VIEW);
    const view = parseView(VIEW);
    expect(
      delivered()
        .slice(from)
        .filter((e) => e.data !== null && !inView(view, published(e.data))),
    ).to.deep.equal([]);
    const inWalk = new Set((await walk(VIEW)).keys());
    expect(
      delivered()
        .slice(from)
        .filter((e) => e.type === LEFT_VIEW_EVENT_TYPE && inWalk.has(e.resource.id)),
    ).to.deep.equal([]);
  });
});
