import type { BatchSqlExecutor } from '../core/ports.js';
import { missingPasswordError, urlHasPassword } from './connection-password.js';
import {
  type PgExecutorOptions,
  type PgPoolLike,
  type PgQueryableLike,
  pgExecutor,
} from './node-pg.js';

/**
 * Adapts `@neondatabase/serverless` `Pool` and `Client` (WebSocket, full Postgres protocol) to
 * the outbox's database port. They are wire-compatible with node-postgres, so this is the pg
 * adapter under the name users look for; interactive transactions work exactly as with pg.
 *
 * A `Pool` whose connection string has no password (and no `password` option or `PGPASSWORD`)
 * is refused with a `ConfigurationError` saying how to add one: Neon always asks for one.
 *
 * On Workers, create the `Pool` inside the request or scheduled handler and `end()` it there
 * (for example with `ctx.waitUntil(pool.end())`): a WebSocket cannot outlive the invocation.
 *
 * Repeated statements run as named prepared statements, planned once per connection; Neon's
 * pooled endpoint keeps them (its docs list protocol-level prepared statements as supported).
 * Behind a pooler that loses them the pool goes unnamed after the first failure, with one
 * warning; `{ prepare: false }` starts that way (docs/deploy.md, "Behind a pooler").
 *
 * @example
 * import { Pool } from '@neondatabase/serverless';
 *
 * const pool = new Pool({ connectionString: env.DATABASE_URL });
 * const client = await pool.connect();
 * await client.query('BEGIN');
 * await outbox.enqueue(neonWsExecutor(client), { kind: 'webhook', payload });
 * await client.query('COMMIT');
 */
export function neonWsExecutor(
  target: PgPoolLike | PgQueryableLike,
  options: PgExecutorOptions = {},
): BatchSqlExecutor {
  if (poolWithoutPassword(target)) {
    throw missingPasswordError("the Pool's connectionString");
  }
  return pgExecutor(target, options);
}

/** A Neon `Pool`'s settings, as far as they say where its password comes from. */
interface PoolSettingsLike {
  options?: { connectionString?: unknown; password?: unknown };
}

/**
 * True for a `Pool` whose connection string names no password, given none of its own and no
 * `PGPASSWORD`: its first connection would find out by throwing out of a WebSocket event
 * handler (`SASL: protocol error`), which no caller can catch, so it is refused here.
 */
function poolWithoutPassword(target: PgPoolLike | PgQueryableLike): boolean {
  const settings = (target as PoolSettingsLike).options;
  if (typeof settings?.connectionString !== 'string') return false;
  if (settings.password !== undefined && settings.password !== null) return false;
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process
    ?.env;
  if (env?.PGPASSWORD) return false;
  return !urlHasPassword(settings.connectionString);
}
