// The scans of a list query's plan (EXPLAIN, not run): the sequential scans of the catalog, its
// sessions or its narrow rows (list_entry), which bench:query reports and
// test/v1/list-query-plans.test.ts refuses, and the indexes read; and the rows a query walks along the list's order (EXPLAIN ANALYZE).
import { parse as parseQuery } from 'node:querystring';
import { isPlainList, listStatement } from '../../src/catalog/list-query.ts';
import { PAGE_MAX_BYTES_DEFAULT, PAGE_SQL, pageBudget } from '../../src/catalog/read-model.ts';
import type { Database } from '../../src/app/database.ts';
import { parseListQuery } from '../../src/http/v1/list-page.ts';

/** A list query's statement as REST runs it: with the page's byte budget (PAGE_MAX_BYTES at its default). */
function statementOf(query: string): { text: string; values?: unknown[] } {
  const { limit, offset, list } = parseListQuery(parseQuery(query));
  const budget = pageBudget(PAGE_MAX_BYTES_DEFAULT);
  return isPlainList(list)
    ? { text: PAGE_SQL.public, values: [limit, offset, null, budget] }
    : listStatement(list, limit, offset, 'public', budget);
}

export type PlanNode = Record<string, unknown>;

/**
 * Every node of a statement's plan, depth first: EXPLAIN (format json) with `options` before it
 * (`analyze` runs the statement, `analyze, buffers` counts its pages too).
 */
export async function explainNodes(
  db: Pick<Database, 'pool'>,
  statement: { text: string; values?: unknown[] },
  options = '',
): Promise<PlanNode[]> {
  const { rows } = await db.pool.query<{ 'QUERY PLAN': unknown }>({
    text: `explain (${options ? `${options}, ` : ''}format json) ${statement.text}`,
    values: statement.values,
  });
  const found: PlanNode[] = [];
  const walk = (node: PlanNode) => {
    found.push(node);
    for (const child of (node.Plans as PlanNode[] | undefined) ?? []) walk(child);
  };
  walk((rows[0]!['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan);
  return found;
}

/** Every node of a list query's plan as REST runs it (EXPLAIN; with `analyze`, the statement runs). */
const planNodes = (db: Pick<Database, 'pool'>, query: string, analyze = false): Promise<PlanNode[]> =>
  explainNodes(db, statementOf(query), analyze ? 'analyze' : '');

/** The scans of a list query's plan (EXPLAIN, not run): each node's type, relation and index. */
export async function planScans(
  db: Pick<Database, 'pool'>,
  query: string,
): Promise<{ type: string; relation?: string; index?: string }[]> {
  return (await planNodes(db, query)).map((node) => ({
    type: node['Node Type'] as string,
    relation: node['Relation Name'] as string | undefined,
    index: node['Index Name'] as string | undefined,
  }));
}

/** The plan's sequential scans of the catalog, of sessions or of list_entry (what the EXPLAIN test refuses). */
export async function sequentialScans(db: Pick<Database, 'pool'>, query: string): Promise<string[]> {
  return (await planScans(db, query))
    .filter((n) => n.type === 'Seq Scan' && ['learning_opportunity', 'lo_session', 'list_entry'].includes(n.relation!))
    .map((n) => n.relation!);
}

// The indexes of the list's whole order: a walk of one reads records of every value until the page is full.
const ORDER_INDEXES = ['learning_opportunity_published_order', 'learning_opportunity_order', 'list_entry_order'];

/**
 * The rows a list query's statement walked along the list's whole order (EXPLAIN ANALYZE: it runs):
 * each such index scan's rows returned and removed by its filter, over all its loops.
 */
export async function orderWalkRows(db: Pick<Database, 'pool'>, query: string): Promise<number> {
  return (await planNodes(db, query, true))
    .filter((node) => ORDER_INDEXES.includes(node['Index Name'] as string))
    .reduce(
      (read, node) =>
        read +
        ((node['Actual Rows'] as number) + ((node['Rows Removed by Filter'] as number | undefined) ?? 0)) *
          (node['Actual Loops'] as number),
      0,
    );
}
