// Migration edited_migrations on a database that ran the earlier texts of five migrations (the schema
// they left, rebuilt here): after it, the schema is what the migrations make of a new database, and
// the reads that failed with 500 (`country=DE&facets=format`, `language=de,fr&facets=format`) answer
// the catalog's counts.
import { expect } from 'chai';
import { apiKeyEntities } from '../../src/auth/entities.ts';
import { catalogEntities } from '../../src/catalog/entities.ts';
import { migrate } from '../../src/db/orm.ts';
import { getJson } from '../support/api.ts';
import { createRecord } from '../support/factories.ts';
import { type OwnDatabase, startOnOwnDatabase } from '../views/own-database.ts';

const MIGRATION = 'Migration20261231000000_edited_migrations';
// The schema as the earlier texts of search_bitmaps, facet_pairs and last_starts left it.
const EARLIER_TEXTS = [
  'drop table rate_limit_usage',
  'alter table api_key drop column rate_limit',
  'drop index event_test_events',
  'alter table search_config drop column marked_max',
  'drop function facet_pair_counts(text, text[], text[], integer)',
  `create function facet_pair_counts(filter_facet text, filter_value text, facets text[], top integer) returns jsonb
     language sql stable as 'select null::jsonb'`,
  'drop index list_entry_format_last',
  'drop index list_entry_language_last',
  `alter table list_entry add column last_starts_at timestamptz(3) generated always as (starts[cardinality(starts)]) stored`,
  `create index list_entry_format_last on list_entry (status, format, last_starts_at) include (id, starts) where last_starts_at is not null`,
  `create index list_entry_language_last on list_entry (status, language, last_starts_at) include (id, starts) where last_starts_at is not null`,
];

type Page = { facets: Record<string, { value: string; count: number }[]> };

describe('migration edited_migrations over the schema of earlier migration texts', function () {
  this.timeout(60_000);
  let own: OwnDatabase;
  before(async () => {
    own = await startOnOwnDatabase();
  });
  after(() => own?.close());

  it('brings the schema to a new database’s, and the facets of a filtered list answer again', async () => {
    const { db, api, key } = own;
    const session = (city: string, country: string) => ({
      id: crypto.randomUUID(),
      startsAt: '2030-03-01T09:00:00.000Z',
      endsAt: null,
      timezone: 'Europe/Berlin',
      format: 'IN_PERSON',
      location: { name: 'Hall', address: '1 Street', city, country },
      capacity: null,
    });
    for (const [format, language, country] of [
      ['IN_PERSON', 'de', 'DE'],
      ['IN_PERSON', 'fr', 'DE'],
      ['HYBRID', 'de', 'DE'],
      ['HYBRID', 'en', 'FR'],
    ] as const)
      await createRecord(api.writes, { format, language, sessions: [session('Town', country)] });
    const facetsOf = async (query: string) => {
      const res = await getJson(api, `/v1/learning-opportunities?${query}&facets=format&limit=1`, key);
      expect(res.status, query).to.equal(200);
      return (res.body as Page).facets.format;
    };
    const want = {
      'country=DE': await facetsOf('country=DE'),
      'language=de,fr': await facetsOf('language=de,fr'),
    };
    expect(want['country=DE']).to.deep.include.members([
      { value: 'IN_PERSON', count: 2 },
      { value: 'HYBRID', count: 1 },
    ]);

    await db.pool.query(`delete from mikro_orm_migrations where name = $1`, [MIGRATION]);
    for (const sql of EARLIER_TEXTS) await db.pool.query(sql);
    expect(await migrate(db.url, 3000, [...catalogEntities, ...apiKeyEntities])).to.deep.equal([MIGRATION]);

    const one = async <T>(sql: string) => (await db.pool.query<{ v: T }>(sql)).rows[0]?.v;
    expect(
      await one(`select count(*)::int as v from information_schema.columns
                  where table_name = 'search_config' and column_name = 'marked_max'`),
    ).to.equal(1);
    expect(
      await one(
        `select array_agg(pg_get_function_identity_arguments(oid)) as v from pg_proc where proname = 'facet_pair_counts'`,
      ),
    ).to.deep.equal(['filter_facet text, filter_values text[], facets text[], top integer']);
    expect(
      await one(`select count(*)::int as v from information_schema.columns
                  where table_name = 'list_entry' and column_name = 'last_starts_at'`),
    ).to.equal(0);
    expect(await one(`select to_regclass('rate_limit_usage') is not null as v`)).to.equal(true);
    expect(await one(`select to_regclass('event_test_events') is not null as v`)).to.equal(true);
    expect(
      await one(`select count(*)::int as v from information_schema.columns
                  where table_name = 'api_key' and column_name = 'rate_limit'`),
    ).to.equal(1);
    for (const index of ['list_entry_format_last', 'list_entry_language_last'])
      expect(await one(`select pg_get_indexdef('${index}'::regclass) as v`), index).to.contain('cardinality(starts)');

    expect(await facetsOf('country=DE')).to.deep.equal(want['country=DE']);
    expect(await facetsOf('language=de,fr')).to.deep.equal(want['language=de,fr']);
  });
});
