import type { BatchSqlExecutor } from '../core/ports.js';
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
 * On Workers, create the `Pool` inside the request or scheduled handler and `end()` it there
 * (for example with `ctx.waitUntil(pool.end())`): a WebSocket cannot outlive the invocation.
 *
 * Repeated statements run as named prepared statements, planned once per connection; Neon's
 * pooled endpoint keeps them (its docs list protocol-level prepared statements as supported).
 * Behind a pooler that loses them the pool goes unnamed after the first failure, with one
 * warning; `{ prepare: false }` starts that way (docs/deploy.md, "Behind a pooler").
 *
 * @example
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
  return pgExecutor(target, options);
}
