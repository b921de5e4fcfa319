// Migration view_states on a database that has events and records already: every stored event gets
// the view facets of its data and of the record's state before it (from the previous event, none
// before a PUBLISHED one whose predecessor is gone, UNKNOWN otherwise), and view_state holds each
// record's last state (its last event's, or the catalog's for a record without events). After it, a
// view's feed counts an UNKNOWN state as maybe in the view: a record going out of it leaves it.
import { expect } from 'chai';
import type { Api } from '../../src/app/service.ts';
import { apiKeyEntities } from '../../src/auth/entities.ts';
import { catalogEntities } from '../../src/catalog/entities.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { migrate } from '../../src/db/orm.ts';
import { LEFT_VIEW_EVENT_TYPE } from '../../src/views/left-view.ts';
import type { ViewFacets } from '../../src/views/view.ts';
import { getJson } from '../support/api.ts';
import { buildLearningOpportunityInput } from '../support/factories.ts';
import { feedSettled } from '../support/feed-horizon.ts';
import type { FeedResponse } from '../feed/feed-support.ts';
import { facetsOf, normalized } from './facets.ts';
import { type OwnDatabase, startOnOwnDatabase } from './own-database.ts';

const MIGRATION = 'Migration20261219000000_view_states';
// The schema before the migration.
const BEFORE_MIGRATION = [
  'drop trigger event_view_states on event',
  'drop trigger view_state_capture_update on learning_opportunity',
  'drop trigger view_state_capture_delete on learning_opportunity',
  'drop function event_view_states()',
  'drop function view_state_capture()',
  'drop table view_state',
  'alter table event drop column view_before, drop column view_after',
  'drop function view_facets(jsonb)',
];

describe('migration view_states over stored events and records', function () {
  this.timeout(60_000);
  let own: OwnDatabase;
  let api: Api;
  let key: string;
  before(async () => {
    own = await startOnOwnDatabase();
    ({ api, key } = own);
  });
  after(() => own?.close());

  it('gives stored events their view states and view_state its rows; an unknown state before counts as in', async () => {
    const { db } = own;
    const pool = db.pool;
    await pool.query(`delete from mikro_orm_migrations where name = $1`, [MIGRATION]);
    for (const sql of BEFORE_MIGRATION) await pool.query(sql);

    const write = async (overrides: Record<string, unknown>) => {
      const input = buildLearningOpportunityInput(overrides);
      await api.writes.upsert(parseLearningOpportunityInput(input));
      return input;
    };
    // a: published, then updated (both events kept).
    const a = await write({ format: 'IN_PERSON' });
    await api.writes.publish(a.id);
    await api.writes.upsert(parseLearningOpportunityInput({ ...a, format: 'HYBRID' }));
    // c: published, updated out of the view below, and its first event pruned.
    const c = await write({ format: 'IN_PERSON' });
    const cPublished = JSON.parse(await api.writes.publish(c.id)) as Record<string, unknown>;
    await api.writes.upsert(parseLearningOpportunityInput({ ...c, format: 'ONLINE' }));
    await pool.query(`delete from event where resource_id = $1 and version = 1`, [c.id]);
    // d: published and deleted.
    const d = await write({});
    await api.writes.publish(d.id);
    await api.writes.delete(d.id);
    // Seeded records: no event at all.
    await seedCatalog(pool, { count: 5, seed: 31, now: new Date(), batchSize: 5 });

    expect(await migrate(db.url, 3000, [...catalogEntities, ...apiKeyEntities])).to.include(MIGRATION);

    type Row = { resource_id: string; version: string; type: string; view_before: unknown; view_after: unknown };
    const { rows } = await pool.query<Row>(
      'select resource_id, version::text, type, view_before, view_after from event where resource_id = any($1) order by resource_id, version',
      [[a.id, c.id, d.id]],
    );
    const of = (id: string) => rows.filter((r) => r.resource_id === id);
    const docs = async (id: string) =>
      (
        await pool.query<{ body: string }>('select body from event where resource_id = $1 order by version', [id])
      ).rows.map((r) => (JSON.parse(r.body) as { data: unknown }).data);
    const [aPublished, aUpdated] = await docs(a.id);
    const facets = (r: Row) => [
      r.type,
      normalized(r.view_before as ViewFacets),
      normalized(r.view_after as ViewFacets),
    ];
    expect(of(a.id).map(facets)).to.deep.equal([
      ['LEARNING_OPPORTUNITY_PUBLISHED', null, facetsOf(aPublished)],
      ['LEARNING_OPPORTUNITY_UPDATED', facetsOf(aPublished), facetsOf(aUpdated)],
    ]);
    const [cUpdated] = await docs(c.id);
    expect(of(c.id).map((r) => [r.type, r.view_before, normalized(r.view_after as ViewFacets)])).to.deep.equal([
      ['LEARNING_OPPORTUNITY_UPDATED', { status: 'UNKNOWN' }, facetsOf(cUpdated)],
    ]);
    expect(of(d.id).map((r) => [r.type, r.view_after === null])).to.deep.equal([
      ['LEARNING_OPPORTUNITY_PUBLISHED', false],
      ['LEARNING_OPPORTUNITY_DELETED', true],
    ]);
    expect(of(d.id)[1]!.view_before).to.deep.equal(of(d.id)[0]!.view_after);

    const states = new Map(
      (
        await pool.query<{ resource_id: string; facets: ViewFacets }>('select resource_id, facets from view_state')
      ).rows.map((r) => [r.resource_id, normalized(r.facets)]),
    );
    expect(states.get(a.id)).to.deep.equal(facetsOf(aUpdated));
    expect(states.get(c.id)).to.deep.equal(facetsOf(cUpdated));
    expect(states.has(d.id)).to.equal(false);
    const seeded = (
      await pool.query<{ id: string; doc: string }>(
        `select id, doc from learning_opportunity lo where not exists (select from event e where e.resource_id = lo.id)`,
      )
    ).rows;
    expect(seeded).to.have.length(5);
    for (const s of seeded) expect(states.get(s.id), s.id).to.deep.equal(facetsOf(JSON.parse(s.doc)));
    expect(cPublished.format).to.equal('IN_PERSON');

    // c's UPDATED to ONLINE, whose state before is unknown, leaves the view format=IN_PERSON (it may
    // have been in it); after the migration the triggers know c's state: back in, it enters.
    const view = 'format=IN_PERSON';
    await feedSettled(pool);
    const res = await getJson(api, `/v1/events?view=${encodeURIComponent(view)}&limit=1000`, key);
    expect(res.status, res.text).to.equal(200);
    const page = res.body as FeedResponse;
    expect(page.results.filter((e) => e.resource.id === c.id).map((e) => e.type)).to.deep.equal([LEFT_VIEW_EVENT_TYPE]);
    const headRes = await getJson(api, `/v1/events/head?view=${encodeURIComponent(view)}`, key);
    expect(headRes.status, headRes.text).to.equal(200);
    const head = (headRes.body as { cursor: string }).cursor;
    await api.writes.upsert(parseLearningOpportunityInput({ ...c, format: 'IN_PERSON' }));
    await api.writes.upsert(parseLearningOpportunityInput({ ...c, format: 'IN_PERSON', title: 'Renamed' }));
    await api.writes.upsert(parseLearningOpportunityInput({ ...c, format: 'ONLINE', title: 'Renamed' }));
    await feedSettled(pool);
    const next = await getJson(api, `/v1/events?view=${encodeURIComponent(view)}&after=${head}`, key);
    expect((next.body as FeedResponse).results.map((e) => [e.type, e.resource.id])).to.deep.equal([
      ['LEARNING_OPPORTUNITY_UPDATED', c.id],
      ['LEARNING_OPPORTUNITY_UPDATED', c.id],
      [LEFT_VIEW_EVENT_TYPE, c.id],
    ]);
  });
});
