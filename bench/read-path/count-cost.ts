// What totalCount costs as the catalog grows. The count is one part of the service's list statement
// (the outer side of its join); it is timed on its own, and the plan of the whole statement (limit=1) shows
// which rows that part reads. For contrast: the whole list statement at limit=1, and a count(*).
import type { Pool } from 'pg';
import { createCatalogReads, PAGE_MAX_BYTES_DEFAULT, PAGE_SQL, pageBudget } from '../../src/catalog/read-model.ts';
import { median } from './http-client.ts';

// The totalCount part of PAGE_SQL.public, verbatim, and the tables behind the catalog_count view.
const COUNT_PART = `select n as total from catalog_count where status = 'PUBLISHED'`;
const COUNT_TABLES = ['catalog_count_base', 'catalog_count_delta'];

export type CountCost = {
  records: number;
  /** Median time of the totalCount part alone. */
  countMs: number;
  /**
   * Rows the count part of the plan read from learning_opportunity (and its indexes), and from the
   * counts (catalog_count is a view: the folded counts of catalog_count_base and the deltas of the
   * writes since the last fold, catalog_count_delta, migration count_deltas).
   */
  catalogRowsRead: number;
  counterRowsRead: number;
  /** Median time of the whole list statement at limit=1 (totalCount, where offset 0 lies, one record). */
  listLimit1Ms: number;
  /** For contrast: a count(*) of the published records. */
  naiveCountMs: number;
};

type PlanNode = {
  'Relation Name'?: string;
  'Subplan Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
};

function rowsReadFrom(node: PlanNode, relation: string): number {
  const own = node['Relation Name'] === relation ? (node['Actual Rows'] ?? 0) * (node['Actual Loops'] ?? 1) : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsReadFrom(child, relation), 0);
}

async function timed(samples: number, work: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = -3; i < samples; i++) {
    const started = performance.now();
    await work();
    if (i >= 0) times.push(performance.now() - started);
  }
  return median(times);
}

export async function measureCountCost(pool: Pool, samples: number): Promise<CountCost> {
  if (!PAGE_SQL.public.includes(COUNT_PART))
    throw new Error('count-cost: the list statement no longer contains the measured count part');
  const reads = createCatalogReads(pool);
  const { rows: counted } = await pool.query<{ n: string }>(
    `select count(*) as n from learning_opportunity where status = 'PUBLISHED'`,
  );
  const countMs = await timed(samples, () => pool.query({ name: 'bench-count-part', text: COUNT_PART }));
  const listLimit1Ms = await timed(samples, () => reads.getPage(1, 0, 'public'));
  const naiveCountMs = await timed(Math.min(samples, 20), () =>
    pool.query(`select count(*) from learning_opportunity where status = 'PUBLISHED'`),
  );
  const { rows } = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `explain (analyze, format json) ${PAGE_SQL.public}`,
    [1, 0, null, pageBudget(PAGE_MAX_BYTES_DEFAULT)],
  );
  // The count is the outer side of the statement's join (its first child), the page the inner side.
  const countPlan = rows[0]!['QUERY PLAN'][0].Plan.Plans?.[0];
  const counterRowsRead = countPlan ? COUNT_TABLES.reduce((sum, table) => sum + rowsReadFrom(countPlan, table), 0) : 0;
  if (!countPlan || counterRowsRead === 0)
    throw new Error(`count-cost: the first child of the plan reads none of ${COUNT_TABLES.join(', ')}`);
  return {
    records: Number(counted[0]!.n),
    countMs,
    catalogRowsRead: rowsReadFrom(countPlan, 'learning_opportunity'),
    counterRowsRead,
    listLimit1Ms,
    naiveCountMs,
  };
}
