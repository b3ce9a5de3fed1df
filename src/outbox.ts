import { ConfigurationError, ValidationError } from './core/errors.js';
import {
  type DestinationOf,
  isValidKindName,
  type KindRegistry,
  type NewMessage,
  type PayloadValidator,
  type PreparedMessage,
  prepareMessages,
} from './core/message.js';
import {
  type BatchSqlExecutor,
  type IdGenerator,
  type SqlExecutor,
  type Statement,
  timeOrderedId,
} from './core/ports.js';
import type { TraceContextSource } from './core/trace-context.js';
import { UNIQUE_VIOLATION, violates } from './drivers/postgres-errors.js';
import { emailDestination, emailPayloadValidator } from './senders/ses/email-payload.js';
import { webhookDestination, webhookPayloadValidator } from './senders/webhook/webhook-payload.js';
import { type MigrateResult, migrate } from './store/migrate.js';
import { PostgresOutboxStore } from './store/postgres-store.js';
import { DEFAULT_SCHEMA, quoteSchema } from './store/schema-name.js';
import { outboxStatements } from './store/statements.js';

/** The kinds every outbox knows, with the payload checks their senders rely on. */
export const BUILT_IN_KINDS: Readonly<Record<'email' | 'webhook', PayloadValidator>> = {
  email: emailPayloadValidator,
  webhook: webhookPayloadValidator,
};

/** The destinations of the built-in kinds: a webhook's origin, and SES with the sending domain. */
export const BUILT_IN_DESTINATIONS: Readonly<Record<'email' | 'webhook', DestinationOf>> = {
  email: emailDestination,
  webhook: webhookDestination,
};

export interface OutboxOptions {
  /** Schema holding the outbox tables. Default `outbox`. */
  schema?: string;
  /**
   * Kinds besides `email` and `webhook`, each with an optional payload check run at enqueue
   * (`true` for none). Listing a built-in kind replaces its check with yours.
   */
  kinds?: Record<string, PayloadValidator | true>;
  /**
   * Makes message keys; default {@link timeOrderedId} (UUID v7: keys made later sort later, so
   * key indexes grow at their right edge). A key given to enqueue may be any UUID.
   */
  newId?: IdGenerator;
  /**
   * Where a message's trace context comes from when its enqueue gives none: called once per
   * enqueue, inside the caller's code, so the active span is the request's.
   * `activeTraceContext(api)` from `outbox-relay/opentelemetry` reads OpenTelemetry's; default
   * none. A source that throws or returns a malformed context leaves the message without one
   * rather than failing the enqueue.
   */
  traceContext?: TraceContextSource;
  /**
   * Keep each delivered message in delivered history until purge: the dashboard's and
   * `list --state delivered`'s history, find by key, and `stats().delivered`. Default true.
   * History keeps one row per settle group (`delivered_groups`), so it costs a delivery about
   * 27 B of write-ahead log and a seventh of its server CPU (5.6 µs in the bench), most of it
   * compressing the group, less where the server has lz4 (docs/benchmarks.md, "The statements,
   * instruction by instruction"). false: a delivered message is only deleted at settle (the
   * per-minute counters still count it). Messages with a dedupe key stay as delivered rows until
   * purge either way, so their key stays taken.
   */
  keepDelivered?: boolean;
  /**
   * Each kind's destination function (see {@link DestinationOf}), recorded with every message at
   * enqueue so drains can pause a receiver that is down without slowing the others
   * (docs/destinations.md). `email` and `webhook` have one already ({@link BUILT_IN_DESTINATIONS});
   * give one for a kind of yours, or `null` to give a kind none (its messages are never paused).
   */
  destinations?: Record<string, DestinationOf | null>;
}

/** What `enqueueStatement` hands back: one statement to run in your own transaction. */
export interface EnqueueStatement {
  statement: Statement;
  /**
   * The keys this statement writes, in input order. When a message carries a dedupe key that
   * already exists, the stored message's key stands instead: read it with `keysFromRows`.
   */
  keys: string[];
  /** Keys in input order from the statement's result rows, dedupe conflicts resolved. */
  keysFromRows(rows: readonly Record<string, unknown>[]): string[];
}

export interface Outbox {
  readonly schema: string;
  readonly kinds: KindRegistry;
  /**
   * Writes messages inside the caller's open transaction, in one statement: they are sent if,
   * and only if, that transaction commits. Validates everything first and throws
   * {@link ValidationError} naming the field, having written nothing. Returns the message keys
   * in input order; a message whose dedupe key already exists returns the existing key.
   *
   * @example
   * await client.query('BEGIN');
   * await client.query('INSERT INTO users (email) VALUES ($1)', [address]);
   * const [key] = await outbox.enqueue(pgExecutor(client), {
   *   kind: 'email',
   *   payload: { to: [address], subject: 'Welcome', text: 'Hello!' },
   * });
   * await client.query('COMMIT');
   */
  enqueue(tx: SqlExecutor, messages: NewMessage | readonly NewMessage[]): Promise<string[]>;
  /**
   * The same write as a statement, for drivers with no interactive transaction: place it in
   * Neon's `sql.transaction([...])` beside your domain write (see `neonHttpQuery`).
   */
  enqueueStatement(messages: NewMessage | readonly NewMessage[]): EnqueueStatement;
  /** The store for drains and admin operations, over any executor. */
  store(db: SqlExecutor): PostgresOutboxStore;
  /** Brings this outbox's schema up to date; see {@link migrate}. */
  migrate(db: BatchSqlExecutor): Promise<MigrateResult>;
}

/**
 * Sets up an outbox: which schema it lives in and which kinds it accepts.
 *
 * @example
 * const outbox = createOutbox({ kinds: { 'slack.post': true } });
 * await outbox.migrate(pgExecutor(pool));
 */
export function createOutbox(options: OutboxOptions = {}): Outbox {
  const schema = options.schema ?? DEFAULT_SCHEMA;
  const statements = outboxStatements(quoteSchema(schema));
  const newId = options.newId ?? timeOrderedId;
  const kinds = new Map<string, PayloadValidator | undefined>(Object.entries(BUILT_IN_KINDS));
  for (const [kind, validator] of Object.entries(options.kinds ?? {})) {
    if (!isValidKindName(kind)) {
      throw new ConfigurationError(
        `kind "${kind}" is not a valid name: lowercase letters, digits and _ . : -`,
      );
    }
    kinds.set(kind, validator === true ? undefined : validator);
  }
  const destinations = new Map<string, DestinationOf>(Object.entries(BUILT_IN_DESTINATIONS));
  for (const [kind, destinationOf] of Object.entries(options.destinations ?? {})) {
    if (!kinds.has(kind)) {
      throw new ConfigurationError(
        `destinations names kind "${kind}", which this outbox does not know: list it in kinds`,
      );
    }
    if (destinationOf === null) destinations.delete(kind);
    else destinations.set(kind, destinationOf);
  }

  const build = (messages: NewMessage | readonly NewMessage[]): EnqueueStatement => {
    const prepared = prepareMessages(messages, kinds, newId, destinations, options.traceContext);
    const unique = firstPerDedupeKey(prepared);
    // Untraced (most enqueues): no arrays at all; unnest pads the missing columns with nulls.
    const traced = unique.some((m) => m.traceparent !== null);
    return {
      statement: {
        name: 'enqueueMessages',
        text: statements.enqueueMessages,
        params: [
          unique.map((m) => m.key),
          unique.map((m) => m.kind),
          unique.map((m) => m.payloadJson),
          unique.map((m) => m.orderingKey),
          unique.map((m) => m.dedupeKey),
          unique.map((m) => m.maxAttempts),
          unique.map((m) => m.dueAt),
          unique.map((m) => m.delayMs),
          unique.map((m) => m.destination),
          traced ? unique.map((m) => m.traceparent) : null,
          traced ? unique.map((m) => m.tracestate) : null,
        ],
      },
      keys: prepared.map((m) => m.key),
      keysFromRows: (rows) => keysInInputOrder(prepared, rows),
    };
  };

  return {
    schema,
    kinds,
    async enqueue(tx, messages) {
      const { statement, keysFromRows } = build(messages);
      try {
        const result = await tx.query(statement.text, statement.params);
        return keysFromRows(result.rows);
      } catch (error) {
        throw explainEnqueueError(error);
      }
    },
    enqueueStatement: build,
    store: (db) => new PostgresOutboxStore(db, { schema, keepDelivered: options.keepDelivered }),
    migrate: (db) => migrate(db, { schema }),
  };
}

/** Within one call, as across calls, a dedupe key yields one message: the first. */
function firstPerDedupeKey(prepared: readonly PreparedMessage[]): PreparedMessage[] {
  const seen = new Set<string>();
  return prepared.filter((message) => {
    if (message.dedupeKey === null) return true;
    if (seen.has(message.dedupeKey)) return false;
    seen.add(message.dedupeKey);
    return true;
  });
}

function keysInInputOrder(
  prepared: readonly PreparedMessage[],
  rows: readonly Record<string, unknown>[],
): string[] {
  const keyByDedupe = new Map<string, string>();
  for (const row of rows) {
    if (typeof row.dedupe_key === 'string') keyByDedupe.set(row.dedupe_key, String(row.key));
  }
  return prepared.map((message) =>
    message.dedupeKey === null ? message.key : (keyByDedupe.get(message.dedupeKey) ?? message.key),
  );
}

/**
 * A caller-chosen message key that already exists is bad input, not a database fault: say so
 * by field. The transaction is aborted either way; Postgres allows nothing else.
 */
function explainEnqueueError(error: unknown): unknown {
  if (violates(error, UNIQUE_VIOLATION, 'messages_key_unique')) {
    return new ValidationError('key', 'a message with this key already exists', { cause: error });
  }
  return error;
}
