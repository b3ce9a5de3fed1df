/**
 * An executor that times every statement it runs, for tests that bound each statement's
 * duration (a replay's batches) rather than the whole run.
 */
import type { SqlExecutor } from '../../src/core/ports.js';

export interface TimedStatement {
  /** The statement's first line of SQL, trimmed: enough to tell them apart. */
  text: string;
  params: unknown[] | undefined;
  ms: number;
}

export function timedExecutor(inner: SqlExecutor): {
  db: SqlExecutor;
  statements: TimedStatement[];
} {
  const statements: TimedStatement[] = [];
  return {
    statements,
    db: {
      async query(text, params) {
        const started = performance.now();
        try {
          return await inner.query(text, params);
        } finally {
          const first = text.trim().split('\n')[0] ?? '';
          statements.push({ text: first.trim(), params, ms: performance.now() - started });
        }
      },
    },
  };
}
