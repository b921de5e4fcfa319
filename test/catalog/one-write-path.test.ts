// The mutations and seed write through one statement (catalog/write-docs.ts): for the same rendered
// records they leave byte-identical rows, docs and nested rows, and a seeded record is exactly what
// the mutations would have stored (saving its content again changes nothing).
import { expect } from 'chai';
import type { Pool } from 'pg';
import { createCatalogWrites } from '../../src/catalog/catalog-writes.ts';
import { parseLearningOpportunityInput } from '../../src/catalog/input.ts';
import { seedCatalog } from '../../src/catalog/seed.ts';
import { writeDocs } from '../../src/catalog/write-docs.ts';
import type { RunSql } from '../../src/db/transaction-sql.ts';
import { createChangeRecorder } from '../../src/events/record-change.ts';
import { testDb } from '../hooks.ts';
import { buildLearningOpportunityInput, resetCatalog } from '../support/factories.ts';

const NESTED = ['lo_session', 'lo_deadline', 'lo_faq', 'lo_external_review', 'lo_accolade'];

/** Every column of the records and of their nested rows (but `pk`, an identity), as text. */
async function snapshot(pool: Pool, ids: string[]): Promise<Record<string, string[]>> {
  const rows = async (sql: string) => (await pool.query<{ r: string }>(sql, [ids])).rows.map((row) => row.r);
  const result: Record<string, string[]> = {
    learning_opportunity: await rows(
      `select to_jsonb(l)::text as r from learning_opportunity l where id = any($1::uuid[]) order by id`,
    ),
  };
  for (const table of NESTED) {
    result[table] = await rows(
      `select (to_jsonb(t) - 'pk')::text as r from ${table} t where learning_opportunity_id = any($1::uuid[]) order by learning_opportunity_id, position`,
    );
  }
  return result;
}

const deleteRecords = (pool: Pool, ids: string[]) =>
  pool.query('delete from learning_opportunity where id = any($1::uuid[])', [ids]);

describe('one write path for the mutations and seed', () => {
  it('stores the same rows, docs and nested rows for the same records through the mutations and through seed', async () => {
    const pool = testDb().pool;
    const writes = createCatalogWrites({ orm: testDb().orm, recordChange: createChangeRecorder(null) });
    const inputs = [
      buildLearningOpportunityInput(),
      buildLearningOpportunityInput({ summary: null, price: null, topics: ['NULL', ' padded '] }),
      buildLearningOpportunityInput({ sessions: [], faqs: null }),
    ];
    const ids = inputs.map((i) => i.id);
    await writes.upsertMany(inputs.map((i) => parseLearningOpportunityInput(i)));
    await writes.publishMany(ids.slice(0, 2));
    // a replaced content: other nested rows, fewer of them
    const edited = {
      ...inputs[0]!,
      title: 'Edited',
      sessions: (inputs[0]!.sessions as unknown[]).slice(1),
      accolades: [],
    };
    // ... beside a new record, in one batch: present records updated, the absent one inserted.
    const fresh = buildLearningOpportunityInput();
    const docs = await writes.upsertMany([
      parseLearningOpportunityInput(edited),
      ...inputs.slice(1).map((i) => parseLearningOpportunityInput(i)),
      parseLearningOpportunityInput(fresh),
    ]);
    ids.push(fresh.id);
    const byMutations = await snapshot(pool, ids);
    expect(byMutations.lo_session).to.have.length(3 + (fresh.sessions as unknown[]).length); // 1 + 2 + 0 + the new one's
    expect(byMutations.learning_opportunity).to.have.length(4);
    expect(JSON.parse(byMutations.learning_opportunity![0]!)).to.have.property('doc');

    await deleteRecords(pool, ids);
    const client = await pool.connect();
    try {
      // What seed does with a batch of rendered records.
      expect(
        await writeDocs(async (text, params) => (await client.query(text, [...params])).rows, docs, 'skip'),
      ).to.equal(4);
    } finally {
      client.release();
    }
    expect(await snapshot(pool, ids)).to.deep.equal(byMutations);
    await deleteRecords(pool, ids);
  });

  it('stores seeded records exactly as the mutations would: saving their content again changes nothing', async () => {
    const pool = testDb().pool;
    await resetCatalog(); // this file's own database: every record is then a seeded one
    expect(await seedCatalog(pool, { count: 20, seed: 20261123, batchSize: 8 })).to.deep.equal({
      inserted: 20,
      skipped: 0,
    });
    const seeded = (
      await pool.query<{ id: string; doc: string }>('select id, doc from learning_opportunity order by id')
    ).rows;
    expect(seeded).to.have.length(20);
    const ids = seeded.map((r) => r.id);
    const before = await snapshot(pool, ids);
    const events = async () =>
      Number(
        (await pool.query<{ n: string }>('select count(*) as n from event where resource_id = any($1::uuid[])', [ids]))
          .rows[0]!.n,
      );

    const writes = createCatalogWrites({ orm: testDb().orm, recordChange: createChangeRecorder(null) });
    const contents = seeded.map(({ doc }) => {
      const record = JSON.parse(doc) as Record<string, unknown>;
      for (const lifecycle of ['status', 'publishedAt', 'createdAt', 'updatedAt']) delete record[lifecycle]; // the service's, not content
      return parseLearningOpportunityInput(record);
    });
    expect(await writes.upsertMany(contents)).to.deep.equal(seeded.map((r) => r.doc));
    expect(await snapshot(pool, ids)).to.deep.equal(before);
    expect(await events()).to.equal(0);
    await resetCatalog();
  });

  it('plans a write of one record as one record: below jit_above_cost, so a server with JIT does not compile it', async () => {
    // Costed as 1,000 records (string_to_table's fixed estimate), every single write crossed
    // jit_above_cost and spent 30 of its 40 ms compiling on PostgreSQL 15 with JIT.
    const pool = testDb().pool;
    const writes = createCatalogWrites({ orm: testDb().orm, recordChange: createChangeRecorder(null) });
    const inputs = Array.from({ length: 200 }, () => buildLearningOpportunityInput());
    const docs = await writes.upsertMany(inputs.map((i) => parseLearningOpportunityInput(i)));
    type PlanNode = { 'Total Cost': number; 'Plan Rows': number; 'Subplan Name'?: string; Plans?: PlanNode[] };
    const plans: PlanNode[] = [];
    // The statement writeDocs runs, explained (with the same parameters) instead of run.
    const explain: RunSql = async <R>(sql: string, params: readonly unknown[]) => {
      const { rows } = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`explain (format json) ${sql}`, [
        ...params,
      ]);
      plans.push(rows[0]!['QUERY PLAN'][0].Plan);
      return rows as R[];
    };
    // The docs as the planner counts them: the rows it expects from the statement's input.
    const inputRows = (plan: PlanNode) => plan.Plans!.find((p) => p['Subplan Name'] === 'CTE input')!['Plan Rows'];
    const jitAboveCost = Number((await pool.query('show jit_above_cost')).rows[0].jit_above_cost);
    for (const kind of ['replace', 'lifecycle'] as const) {
      plans.length = 0;
      await writeDocs(explain, docs.slice(0, 1), kind);
      await writeDocs(explain, docs, kind);
      const [one, many] = plans as [PlanNode, PlanNode];
      expect(one['Total Cost'], `${kind}: one record`).to.be.below(jitAboveCost);
      // The estimate follows the number of docs (so a batch is still costed as a batch).
      expect([inputRows(one), inputRows(many)], `${kind}: the docs counted`).to.deep.equal([1, 200]);
      expect(many['Total Cost'], `${kind}: 200 records against one`).to.be.above(one['Total Cost'] * 5);
    }
    await deleteRecords(
      pool,
      inputs.map((i) => i.id),
    );
  });
});
