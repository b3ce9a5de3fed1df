/**
 * A pool's `end()` resolves once its clients are told to close, not once they have. A test
 * file's `DROP DATABASE ... WITH (FORCE)` right after can end a backend whose client is still
 * closing, and pg-pool re-emits that client's 57P01 on the pool; with no listener it becomes an
 * unhandled error that fails whichever file is running. Nothing uses the pool by then.
 */

/** A pg or Neon pool, as far as this needs it. */
export interface ClosingPool {
  on(event: 'error', listener: (error: Error) => void): unknown;
  end(): Promise<void>;
}

/**
 * Ends `pool`, ignoring the errors its closing clients report from then on. Errors before this
 * is called stay unhandled, as they would be without it.
 */
export function endIgnoringClosingErrors(pool: ClosingPool): Promise<void> {
  closing.add(pool);
  return pool.end();
}

/** Call once when the pool is made. */
export function watchClosingErrors(pool: ClosingPool): void {
  pool.on('error', (error) => {
    if (!closing.has(pool)) throw error;
  });
}

const closing = new WeakSet<object>();
