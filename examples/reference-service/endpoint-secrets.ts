import type { SqlExecutor } from 'outbox-relay';
import { quoteSchema } from 'outbox-relay/sql';

/** The reference service's tables live here unless configured otherwise. */
export const DEFAULT_APP_SCHEMA = 'app';

/**
 * Reads a webhook endpoint's signing secret by id from the reference service's
 * `webhook_endpoints` table. `undefined` when the endpoint was deleted or disabled: the webhook
 * sender treats that as a permanent failure. A database error propagates and is retryable.
 */
export function endpointSecretLookup(
  db: SqlExecutor,
  appSchema: string = DEFAULT_APP_SCHEMA,
): (endpointId: string) => Promise<string | undefined> {
  const text = `SELECT secret FROM ${quoteSchema(appSchema)}.webhook_endpoints
    WHERE id = $1 AND disabled_at IS NULL`;
  return async (endpointId) => {
    if (!/^[0-9a-f-]{36}$/i.test(endpointId)) return undefined;
    const { rows } = await db.query(text, [endpointId]);
    const secret = rows[0]?.secret;
    return typeof secret === 'string' ? secret : undefined;
  };
}
