/**
 * The JSON error shape every HTTP surface of outbox-relay answers with (the admin app), and
 * that apps built on it can share: one format for clients to parse, fields named as paths.
 */
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

/** One problem with a request, naming the field as a path: `["items", 2, "qty"]`. */
export interface Issue {
  path: (string | number)[];
  message: string;
}

/**
 * Every error response is JSON of this shape, so clients parse one format. `issues` names the
 * offending fields on a 4xx; `requestId` ties a 500 to the server log without leaking internals.
 */
export interface ErrorBody {
  error: string;
  issues?: Issue[];
  requestId?: string;
}

export function errorResponse(
  c: Context,
  status: ContentfulStatusCode,
  error: string,
  issues?: Issue[],
): Response {
  const body: ErrorBody = issues ? { error, issues } : { error };
  return c.json(body, status);
}

/** Turns a `ValidationError` field (`message.payload.to[1]`) into an issue path. */
export function pathOfField(field: string): (string | number)[] {
  return field
    .split(/\.|\[(\d+)\]/)
    .filter((part) => part !== undefined && part !== '')
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}
