/**
 * Runs `task` over `items` with at most `limit` in flight, in order of start. Every peer's
 * handler in the bench uses this one helper, so "10 in flight" means the same for all of them.
 */
export async function forEachWithConcurrency<T>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await task(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
