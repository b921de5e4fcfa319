// The statement-level triggers on learning_opportunity (list_bucket, list_entry, list_session,
// facet_count, catalog_count) run their statements through PL/pgSQL, which keeps each statement's
// plan for the rest of the session. A service's pooled connection writes single records for hours,
// then a batch (a batch upsert, `catalog rerender`, an operator's statement): a join over the
// transition tables planned for one row, kept and run over thousands, compares every row with every
// other (a bulk delete of 5,200 records took 5.6 s in list_entry's trigger, a bulk update of 5,000
// took 2.4 s in list_bucket's, against 15 and 35 ms planned afresh), and a plan made on an empty
// catalog reads all of it for every later single write. Here one connection writes nothing and
// single records first, then thousands per statement, then single records among those thousands:
// every statement the triggers ran (auto_explain, nested statements) must have read rows in
// proportion to what it wrote (a batch, not its square; one record, not the catalog).
import { expect } from 'chai';
import pg from 'pg';
import { testDb } from '../hooks.ts';
import { resetCatalog } from '../support/factories.ts';
import { type PlanNode, planNodes, rowsTouched } from '../support/query-plans.ts';

const BATCH = 3000;
/** Rows any one plan node may read per written record (a linear plan reads a few). */
const ROWS_PER_RECORD = 20;

type LoggedPlan = { 'Query Text': string; Plan: PlanNode };

/** The most rows one node of the plan read or produced, over all its loops. */
const busiestNode = (plan: PlanNode): number => Math.max(...planNodes(plan).map(rowsTouched));

// A record with one topic and one session row, written in one statement as write-docs.ts writes
// them (the session row beside its record: list_entry reads the places and starts from it), so that
// every trigger has rows to write.
const INSERT_SQL = `
  with g as (select gen_random_uuid() as id, timestamptz '2026-01-01' + i * interval '1 second' as at,
                    case when i % 4 = 0 then 'DRAFT' else 'PUBLISHED' end as status
               from generate_series(1, $1::int) i),
  records as (
    insert into learning_opportunity (id, title, format, status, topics, published_at, created_at, updated_at, doc)
    select id, 'Plan test', 'ONLINE', status, '["data"]', case when status = 'PUBLISHED' then at end, at, at,
           json_build_object('id', id, 'sessions', json_build_array(json_build_object(
             'startsAt', at + interval '30 days', 'location', json_build_object('country', 'NL', 'city', 'Utrecht'))))::text
      from g),
  sessions as (
    insert into lo_session (item_id, learning_opportunity_id, position, starts_at, location)
    select gen_random_uuid(), id, 0, at + interval '30 days', '{"country": "NL", "city": "Utrecht"}' from g)
  select 1`;
// Every row's key and (for most) its published state change, and its session moves (its row and its doc).
const UPDATE_SQL = `
  with picked as (select id from learning_opportunity order by id limit $1::int),
  moved as (update lo_session set starts_at = starts_at + interval '1 year'
             where learning_opportunity_id in (select id from picked))
  update learning_opportunity set updated_at = updated_at + interval '1 day',
         status = case when status = 'PUBLISHED' then 'ARCHIVED' else 'PUBLISHED' end,
         doc = replace(doc, '"startsAt" : "2026', '"startsAt" : "2027')
   where id in (select id from picked)`;
const DELETE_SQL = `delete from learning_opportunity where id in (select id from learning_opportunity order by id limit $1::int)`;

describe('catalog triggers on a long-lived connection', () => {
  let client: pg.Client;
  let plans: LoggedPlan[] = [];

  before(async () => {
    await resetCatalog();
    client = new pg.Client({ connectionString: testDb().url });
    await client.connect();
    client.on('notice', (notice) => {
      const at = notice.message?.indexOf('plan:\n') ?? -1;
      if (at >= 0) plans.push(JSON.parse(notice.message!.slice(at + 'plan:\n'.length)) as LoggedPlan);
    });
  });
  after(async () => {
    await client.end();
    await resetCatalog();
  });

  it('reads rows in proportion to what each statement writes, whatever the connection wrote before', async function () {
    this.timeout(120_000);
    // Statements first that find nothing (the catalog is empty), then single-record writes, as a
    // service connection makes them: each trigger plans its statements now.
    await client.query(UPDATE_SQL, [1]);
    await client.query(DELETE_SQL, [1]);
    for (let i = 0; i < 3; i++) {
      await client.query(INSERT_SQL, [1]);
      await client.query(UPDATE_SQL, [1]);
      await client.query(DELETE_SQL, [1]);
    }
    await client.query(`load 'auto_explain'`);
    await client.query(`set auto_explain.log_min_duration = 0; set auto_explain.log_analyze = on;
                        set auto_explain.log_timing = off; set auto_explain.log_nested_statements = on;
                        set auto_explain.log_format = json; set client_min_messages = log`);
    const checked = new Set<string>();
    /** Runs `sql` for `records` records; every statement it and its triggers ran read at most `bound` rows in any plan node. */
    const expectRowsRead = async (what: string, sql: string, records: number, bound: number) => {
      plans = [];
      await client.query(sql, [records]);
      // The foreign keys' per-row statements (ON DELETE CASCADE) read nothing here; every other
      // statement is the written statement or one a trigger ran.
      const ours = plans.filter((p) => !/^\s*(DELETE FROM|SELECT 1 FROM) ONLY /.test(p['Query Text']));
      expect(ours.length, `${what}: statements seen`).to.be.at.least(2);
      for (const plan of ours) {
        checked.add(plan['Query Text'].trim().slice(0, 60));
        expect(busiestNode(plan.Plan), `${what}: ${plan['Query Text'].trim()}`).to.be.at.most(bound);
      }
    };
    await expectRowsRead('bulk insert', INSERT_SQL, BATCH, BATCH * ROWS_PER_RECORD);
    // The records' sessions reached list_entry and list_session (each record has one).
    const kept = await client.query<{ starts: string; sessions: string }>(
      `select (select count(*) from list_entry where cardinality(starts) = 1) as starts, (select count(*) from list_session) as sessions`,
    );
    expect(kept.rows[0]).to.deep.equal({ starts: String(BATCH), sessions: String(BATCH) });
    // Single records again, now among thousands: no statement reads the whole catalog (a range of
    // list_bucket, at most 1,024 records, is the most a write reads).
    for (const [what, sql] of [
      ['insert', INSERT_SQL],
      ['update', UPDATE_SQL],
      ['delete', DELETE_SQL],
    ] as const)
      await expectRowsRead(`single ${what}`, sql, 1, 1024 + ROWS_PER_RECORD);
    await expectRowsRead('bulk update', UPDATE_SQL, BATCH, BATCH * ROWS_PER_RECORD);
    await expectRowsRead('bulk delete', DELETE_SQL, BATCH, BATCH * ROWS_PER_RECORD);
    await client.query(`set client_min_messages = notice`);
    // The triggers ran (their statements were checked), and what they keep is exact afterwards.
    expect([...checked].join('\n'))
      .to.include('list_entry')
      .and.include('list_session')
      .and.include('list_bucket');
    const { rows } = await client.query<{ entries: string; sessions: string; counted: string; records: string }>(
      `select (select count(*) from list_entry) as entries, (select count(*) from list_session) as sessions,
              (select sum(n_all) from list_bucket) as counted, (select count(*) from learning_opportunity) as records`,
    );
    expect(rows[0]).to.deep.equal({ entries: '0', sessions: '0', counted: '0', records: '0' });
  });
});
