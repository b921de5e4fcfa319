// The nodes of an EXPLAIN (ANALYZE, FORMAT JSON) plan, as the tests that bound a statement's reads walk them.
export type PlanNode = {
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Join Filter'?: number;
  Plans?: PlanNode[];
};

/** Every node of the plan, the root first. */
export function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}

/** Rows a node read or produced over all its loops, those its filters removed included. */
export const rowsTouched = (node: PlanNode): number =>
  (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Join Filter'] ?? 0)) *
  node['Actual Loops'];
