/**
 * The order systems (or variants) run in, rotated by one place each run: over as many runs as
 * there are systems, each goes first once, so neither warm caches nor a quiet moment on a
 * shared machine keep favouring the same one.
 */
export function rotated<T>(items: readonly T[], run: number): T[] {
  if (items.length === 0) return [];
  const shift = (((run - 1) % items.length) + items.length) % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}
