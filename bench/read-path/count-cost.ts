// What totalCount costs as the catalog grows: the service's list statement at limit=1 (timed, and its
// plan), beside what a naive count(*) would cost on the same data.
import type { Pool } from 'pg';
import { createCatalogReads, PAGE_SQL } from '../../src/catalog/read-model.ts';
import { median } from './http-client.ts';

export type CountCost = {
  records: number;
  /** Median time of the service's list statement with limit=1 (totalCount + one record). */
  listLimit1Ms: number;
  /** Rows the plan read from learning_opportunity (its indexes included) and from catalog_count. */
  catalogRowsRead: number;
  counterRowsRead: number;
  /** For contrast: a count(*) of the published records. */
  naiveCountMs: number;
};

type PlanNode = { 'Relation Name'?: string; 'Actual Rows'?: number; 'Actual Loops'?: number; Plans?: PlanNode[] };

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
  const reads = createCatalogReads(pool);
  const { rows: counted } = await pool.query<{ n: string }>(`select count(*) as n from learning_opportunity where status = 'PUBLISHED'`);
  const listLimit1Ms = await timed(samples, () => reads.getPage(1, 0, 'public'));
  const naiveCountMs = await timed(Math.min(samples, 20), () => pool.query(`select count(*) from learning_opportunity where status = 'PUBLISHED'`));
  const { rows } = await pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`explain (analyze, format json) ${PAGE_SQL.public}`, [1, 0]);
  const plan = rows[0]!['QUERY PLAN'][0].Plan;
  return {
    records: Number(counted[0]!.n),
    listLimit1Ms,
    catalogRowsRead: rowsReadFrom(plan, 'learning_opportunity'),
    counterRowsRead: rowsReadFrom(plan, 'catalog_count'),
    naiveCountMs,
  };
}
