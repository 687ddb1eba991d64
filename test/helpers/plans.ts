/**
 * Plans of `EXPLAIN (ANALYZE, FORMAT JSON)` as the tests read them: the nodes of a plan, and the rows a node read.
 */

/** A plan node of `EXPLAIN (FORMAT JSON)`. */
export interface PlanNode {
  'Node Type': string
  'Relation Name'?: string
  'Index Name'?: string
  'Actual Rows'?: number
  'Actual Loops'?: number
  'Rows Removed by Filter'?: number
  'Rows Removed by Index Recheck'?: number
  'Parent Relationship'?: string
  'Subplan Name'?: string
  Plans?: PlanNode[]
}

/** The node and every node under it. */
export const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)]

/** What a node read in all: the rows it returned and those its filters removed, over all its loops. */
export const rowsRead = (n: PlanNode): number =>
  ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) *
  (n['Actual Loops'] ?? 0)
