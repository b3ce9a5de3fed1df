import type { Context, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import { errorResponse } from './errors.js';

/** The dashboard's session cookie: the admin token itself, HttpOnly and SameSite=Strict. */
export const ADMIN_COOKIE = 'outbox_admin';

/** Header or form field carrying the CSRF token on cookie-authenticated state changes. */
export const CSRF_HEADER = 'x-csrf-token';
export const CSRF_FIELD = 'csrf';

export type AdminAuthMethod = 'bearer' | 'cookie';

/** Constant-time comparison: compare digests, so neither length nor prefix leaks by timing. */
export async function tokensMatch(given: string, expected: string): Promise<boolean> {
  const encoder = new TextEncoder();
  const [a, b] = await Promise.all([
    crypto.subtle.digest('SHA-256', encoder.encode(given)),
    crypto.subtle.digest('SHA-256', encoder.encode(expected)),
  ]);
  const left = new Uint8Array(a);
  const right = new Uint8Array(b);
  let difference = 0;
  for (let index = 0; index < left.length; index++) difference |= left[index]! ^ right[index]!;
  return difference === 0;
}

/**
 * The CSRF token for a cookie session: an HMAC of a fixed label under the admin token. A page
 * served to someone holding the cookie can embed it; a cross-site form cannot know it.
 */
export async function csrfToken(adminToken: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(adminToken),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode('outbox-relay csrf'));
  return btoa(String.fromCharCode(...new Uint8Array(mac)))
    .replaceAll('+', '-')
    .replaceAll('/', '_')
    .replace(/=+$/, '');
}

/**
 * Admin authentication: `Authorization: Bearer <token>` (API clients) or the dashboard cookie.
 * A state change made with the cookie must also carry the CSRF token, because browsers attach
 * cookies to cross-site requests and never attach Authorization headers. With no token
 * configured the admin surface does not exist: 404, not 401, so it is not even advertised.
 *
 * `allowAnonymous` lists paths that must answer without a session (the login form).
 */
export function adminAuth(
  adminToken: string | undefined,
  options: { allowAnonymous?: readonly string[] } = {},
): MiddlewareHandler<{ Variables: { adminAuth: AdminAuthMethod } }> {
  return async (c, next) => {
    if (!adminToken) return errorResponse(c, 404, 'not found');
    const header = c.req.header('authorization');
    if (header?.startsWith('Bearer ')) {
      if (!(await tokensMatch(header.slice('Bearer '.length).trim(), adminToken))) {
        return unauthorized(c);
      }
      c.set('adminAuth', 'bearer');
      return next();
    }
    const cookie = getCookie(c, ADMIN_COOKIE);
    if (cookie !== undefined && (await tokensMatch(cookie, adminToken))) {
      if (isStateChange(c.req.method) && !(await csrfTokenMatches(c, adminToken))) {
        return errorResponse(c, 403, 'missing or wrong CSRF token');
      }
      c.set('adminAuth', 'cookie');
      return next();
    }
    if (options.allowAnonymous?.includes(c.req.path)) return next();
    return unauthorized(c);
  };
}

function unauthorized(c: Context): Response {
  c.header('WWW-Authenticate', 'Bearer realm="outbox-relay admin"');
  return errorResponse(c, 401, 'admin token required: Authorization: Bearer <ADMIN_TOKEN>');
}

function isStateChange(method: string): boolean {
  return !['GET', 'HEAD', 'OPTIONS'].includes(method);
}

async function csrfTokenMatches(c: Context, adminToken: string): Promise<boolean> {
  let given = c.req.header(CSRF_HEADER);
  if (given === undefined) {
    const type = c.req.header('content-type') ?? '';
    if (
      type.includes('application/x-www-form-urlencoded') ||
      type.includes('multipart/form-data')
    ) {
      const form = await c.req.parseBody();
      const field = form[CSRF_FIELD];
      given = typeof field === 'string' ? field : undefined;
    }
  }
  return given !== undefined && (await tokensMatch(given, await csrfToken(adminToken)));
}
