/**
 * Every mutation behind docs/invariants.md, in the order of its rows: the table
 * `npm run test:mutations` prints (scripts/mutations.ts) follows this order.
 */
import type { Mutation } from './mutation.js';
import { RUNTIME_MUTATIONS } from './mutation-list-runtime.js';
import { SQL_MUTATIONS } from './mutation-list-sql.js';

export type { Mutation, NamedTest, SourceEdit } from './mutation.js';

/** Sorted by row; within a row, SQL mutations first, each list in its own order. */
export const MUTATIONS: readonly Mutation[] = [...SQL_MUTATIONS, ...RUNTIME_MUTATIONS].sort(
  (a, b) => a.row - b.row,
);
