/**
 * The ports the core talks through. Adapters in src/drivers and src/senders implement them; the
 * core imports no driver, SDK or runtime.
 */

/** What any Postgres driver returns for one statement, reduced to what we read. */
export interface QueryResult<Row = Record<string, unknown>> {
  rows: Row[];
  rowCount: number;
}

/** One SQL statement and its parameters. Values always travel as parameters, never in `text`. */
export interface Statement {
  /** A short stable name, for logs and metrics. */
  name: string;
  text: string;
  params: unknown[];
}

/**
 * The one narrow database port: run a statement, get rows back. Anything that can do this is a
 * valid target for enqueue and drain: a pg `Pool`, a `PoolClient` inside the caller's open
 * transaction, a Neon `Pool`/`Client`, or Neon's HTTP `neon()` function (see src/drivers/).
 *
 * Rows come back as plain records, not typed by the caller: an executor you write yourself is
 * then an object literal with no type parameter and no cast, whatever its driver types rows as.
 * Whoever runs a statement knows its columns and reads them as such (the store does).
 *
 * @example
 * // Over a driver the package has no adapter for, or wrapping one: no type parameter, no cast.
 * const db: SqlExecutor = {
 *   async query(text, params) {
 *     const { rows, rowCount } = await sql.query(text, params, { fullResults: true });
 *     return { rows, rowCount };
 *   },
 * };
 */
export interface SqlExecutor {
  query(text: string, params?: unknown[]): Promise<QueryResult>;
}

/**
 * An executor that can also run several statements atomically in one transaction, in order, with
 * no application logic between them. That is what Neon's HTTP `sql.transaction([...])` offers, so
 * it is all we ask for: migrations are written to need nothing more.
 */
export interface BatchSqlExecutor extends SqlExecutor {
  batch(statements: readonly Statement[]): Promise<QueryResult[]>;
}

/** Time, injected so tests can move it. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** Structured logging; the default writes nothing. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};

/** Makes message keys and claim tokens; injected so tests can make them predictable. */
export type IdGenerator = () => string;

/** A random UUID (version 4): 122 random bits. Claim tokens use it. */
export const randomId: IdGenerator = () => crypto.randomUUID();

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/**
 * A time-ordered UUID (version 7, RFC 9562): the first 48 bits are the Unix time in
 * milliseconds, then the version, 12 random bits, the variant and 62 more random bits (74 random
 * bits in all, from `crypto.getRandomValues`). The default message key: keys made later sort
 * later, so the key indexes grow at their right edge instead of touching a random page per
 * insert (fewer pages dirtied, fewer full-page images after a checkpoint, fewer page splits).
 * Keys made in the same millisecond are unique but in no particular order among themselves.
 * A key reveals when it was made, to the millisecond (docs/security.md).
 *
 * @example
 * const outbox = createOutbox({ newId: timeOrderedId }); // the default already
 */
export const timeOrderedId: IdGenerator = () => {
  const now = Date.now();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  // 48-bit big-endian milliseconds; split because bit operators in JS are 32-bit.
  const high = Math.floor(now / 0x1_0000_0000);
  const low = now >>> 0;
  bytes[0] = (high >>> 8) & 0xff;
  bytes[1] = high & 0xff;
  bytes[2] = (low >>> 24) & 0xff;
  bytes[3] = (low >>> 16) & 0xff;
  bytes[4] = (low >>> 8) & 0xff;
  bytes[5] = low & 0xff;
  bytes[6] = 0x70 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = Array.from(bytes, (byte) => HEX[byte]).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};
