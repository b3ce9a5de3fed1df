/**
 * How the admin API's routes read what they are sent: a JSON body of known fields, and a
 * `ValidationError` from anything they read answered as a 400 naming the field, before
 * anything is written.
 */
import type { Context } from 'hono';
import { isValidationError, ValidationError } from '../core/errors.js';
import { errorResponse, pathOfField } from '../http/json-errors.js';

/**
 * The JSON body as an object of the given fields only; anything else (no JSON, not an object,
 * an unknown field) is a ValidationError: `body` for the whole, or the unknown field's name.
 */
export async function bodyOf(
  c: Context,
  fields: readonly string[],
  expected: string,
): Promise<Record<string, unknown>> {
  const body: unknown = await c.req.json().catch(() => undefined);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationError('body', `expected a JSON object with ${expected}`);
  }
  for (const name of Object.keys(body)) {
    if (!fields.includes(name)) {
      throw new ValidationError(name, `unknown field; expected ${fields.join(', ')}`);
    }
  }
  return body as Record<string, unknown>;
}

/** `value` when it is a whole number from `min` to `max`; undefined when absent. */
export function wholeIn(
  value: unknown,
  field: string,
  min: number,
  max: number,
): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max) {
    throw new ValidationError(field, `expected an integer from ${min} to ${max}`);
  }
  return value as number;
}

/** Runs a route; a `ValidationError` from its input becomes a 400 naming the field. */
export async function answerOrBadRequest(
  c: Context,
  answer: () => Promise<Response>,
): Promise<Response> {
  try {
    return await answer();
  } catch (error) {
    if (isValidationError(error)) {
      const message = error.message.slice(error.field.length + 2);
      return errorResponse(c, 400, 'invalid request', [
        { path: pathOfField(error.field), message },
      ]);
    }
    throw error;
  }
}
