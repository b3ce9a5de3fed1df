import { ConfigurationError } from '../core/errors.js';

export const DEFAULT_SCHEMA = 'outbox';

/** Lowercase identifiers only: they need no case folding rules and read the same in psql. */
const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The schema is the one name we place in SQL text (identifiers cannot be parameters), so it is
 * checked against a strict pattern and double-quoted; anything else is a configuration error.
 */
export function quoteSchema(schema: string): string {
  if (!SCHEMA_PATTERN.test(schema)) {
    throw new ConfigurationError(
      `schema "${schema}" is not allowed: use lowercase letters, digits and _ (at most 63)`,
    );
  }
  return `"${schema}"`;
}
