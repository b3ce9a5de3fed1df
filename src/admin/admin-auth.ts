/**
 * Who may use the admin app, as Hono middleware: `Authorization: Bearer <token>` for API
 * clients, or the dashboard's signed session cookie. A state change made with the cookie must
 * also carry the session's CSRF token, because browsers attach cookies to cross-site requests
 * and never attach Authorization headers. Wrong Bearer tokens count as failed logins.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { every } from 'hono/combine';
import { getCookie, setCookie } from 'hono/cookie';
import { secureHeaders } from 'hono/secure-headers';
import { errorResponse } from '../http/json-errors.js';
import type { AdminEnv, ResolvedAdmin } from './admin-options.js';
import { mountPath } from './admin-paths.js';
import { ADMIN_SESSION_COOKIE, type AdminSession } from './admin-session.js';
import { UNKNOWN_CLIENT } from './login-throttle.js';

/** Header or form field carrying the CSRF token on cookie-authenticated state changes. */
export const CSRF_HEADER = 'x-csrf-token';
export const CSRF_FIELD = 'csrf';

/**
 * Nothing may load or run but the page's inline styles: no script (so injected markup stays
 * inert), no remote image or font, forms post only to this origin, and no other site may frame
 * the page (clickjacking). JSON replies carry it too; it costs nothing there.
 */
export const ADMIN_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'";

/**
 * Headers on every admin reply: `hono/secure-headers` with the CSP above, `nosniff`, no
 * referrer; and `Cache-Control: no-store`, because every reply holds operational data (and
 * pages a CSRF token) that must not sit in a shared or back-button cache. HSTS is left to the
 * host app: it covers the whole domain, which a mounted sub-app has no business deciding.
 */
export function adminHeaders(): MiddlewareHandler {
  const secure = secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'none'"],
      styleSrc: ["'unsafe-inline'"],
      imgSrc: ['data:'],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
    },
    referrerPolicy: 'no-referrer',
    xFrameOptions: 'DENY',
    strictTransportSecurity: false,
  });
  return async (c, next) => {
    await secure(c, async () => {
      await next();
      c.res.headers.set('Cache-Control', 'no-store');
    });
  };
}

/**
 * Every admin route starts here: without a token the surface does not exist (404, not even
 * advertised); with one, the mount path is noted for links, redirects and the cookie.
 */
export function adminConfigured(admin: ResolvedAdmin): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    if (!admin.token || !admin.signer) return errorResponse(c, 404, 'not found');
    c.set('adminBase', mountPath(c, admin.basePath));
    return next();
  };
}

/**
 * Reads the credential, if any, into `c.var.adminAuth`; refuses only what is wrong outright: a
 * throttled or wrong Bearer token (429, 401), a cookie state change
 * without its CSRF token (403). Anonymous requests pass on; {@link requireAdmin} stops them.
 */
export function identifyAdmin(admin: ResolvedAdmin): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const { token, signer } = admin;
    if (!token || !signer) return errorResponse(c, 404, 'not found');
    const header = c.req.header('authorization');
    if (header !== undefined && /^bearer /i.test(header)) {
      const address = clientKey(admin, c);
      const waitMs = admin.throttle.waitMs(address);
      if (waitMs > 0) return tooManyAttempts(c, waitMs);
      if (!(await tokensMatch(header.slice('bearer '.length).trim(), token))) {
        recordFailedLogin(admin, address, 'bearer');
        return unauthorized(c);
      }
      admin.throttle.recordSuccess(address);
      c.set('adminAuth', { method: 'bearer' });
      return next();
    }
    const cookie = getCookie(c, ADMIN_SESSION_COOKIE);
    const now = admin.clock.now();
    const session = cookie === undefined ? null : await signer.read(cookie, now);
    if (session && !(await admin.revokedSessions.isRevoked(session.id, now))) {
      if (isStateChange(c.req.method) && !(await csrfTokenMatches(admin, c, session))) {
        return errorResponse(c, 403, 'missing or wrong CSRF token');
      }
      const refreshed = await signer.refresh(session, now);
      if (refreshed) setSessionCookie(c, refreshed.cookie, refreshed.session, now);
      c.set('adminAuth', { method: 'cookie', session: refreshed?.session ?? session });
    }
    return next();
  };
}

/** Refuses anonymous requests: 401 JSON, or `onAnonymous`'s reply (the dashboard's sign-in). */
export function requireAdmin(
  onAnonymous: (c: Context<AdminEnv>) => Response | Promise<Response> = unauthorized,
): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    if (!c.get('adminAuth')) return onAnonymous(c);
    return next();
  };
}

/** Middlewares run in order as one (`hono/combine`'s `every`), typed for the admin app. */
export function chain(...middlewares: MiddlewareHandler<AdminEnv>[]): MiddlewareHandler<AdminEnv> {
  return every(...(middlewares as MiddlewareHandler[])) as MiddlewareHandler<AdminEnv>;
}

/** Counts a wrong token toward the address's wait, and tells the operator's log. */
export function recordFailedLogin(
  admin: ResolvedAdmin,
  address: string,
  via: 'bearer' | 'form',
): void {
  const waitMs = admin.throttle.recordFailure(address);
  admin.logger.warn('admin sign-in with a wrong token', { client: address, via, waitMs });
}

/** The throttle's key for this request's client. */
export function clientKey(admin: ResolvedAdmin, c: Context): string {
  return admin.clientAddress(c) || UNKNOWN_CLIENT;
}

/** Sets the session cookie: HttpOnly, SameSite=Strict, scoped to the mount path. */
export function setSessionCookie(
  c: Context<AdminEnv>,
  value: string,
  session: AdminSession,
  now: Date,
): void {
  setCookie(c, ADMIN_SESSION_COOKIE, value, {
    httpOnly: true,
    sameSite: 'Strict',
    path: c.get('adminBase') || '/',
    secure: isHttps(c),
    maxAge: Math.max(1, Math.ceil((session.expiresAt - now.getTime()) / 1000)),
  });
}

/** Secure cookies need https; behind a TLS-terminating proxy the proxy says so. */
export function isHttps(c: Context): boolean {
  if (new URL(c.req.url).protocol === 'https:') return true;
  return c.req.header('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase() === 'https';
}

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

/** 429 with `Retry-After` in whole seconds. */
export function tooManyAttempts(c: Context, waitMs: number): Response {
  c.header('Retry-After', String(Math.ceil(waitMs / 1000)));
  return errorResponse(c, 429, 'too many wrong admin tokens from this address; wait and retry');
}

function unauthorized(c: Context): Response {
  c.header('WWW-Authenticate', 'Bearer realm="outbox-relay admin"');
  return errorResponse(c, 401, 'admin token required: Authorization: Bearer <token>');
}

function isStateChange(method: string): boolean {
  return !['GET', 'HEAD', 'OPTIONS'].includes(method);
}

async function csrfTokenMatches(
  admin: ResolvedAdmin,
  c: Context,
  session: AdminSession,
): Promise<boolean> {
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
  return given !== undefined && (await admin.signer!.csrfTokenMatches(session, given));
}

/**
 * A Bearer-token guard for a host app's own admin routes beside `outboxAdmin` (the reference
 * service's `POST /admin/migrate`): 404 without a token configured, 401 for a missing or wrong
 * one, in the same JSON shape. It keeps no state, so it does not throttle; keep such routes few.
 */
export function adminBearerAuth(token: string | undefined): MiddlewareHandler {
  return async (c, next) => {
    if (!token) return errorResponse(c, 404, 'not found');
    const header = c.req.header('authorization');
    if (header === undefined || !/^bearer /i.test(header)) return unauthorized(c);
    if (!(await tokensMatch(header.slice('bearer '.length).trim(), token))) return unauthorized(c);
    return next();
  };
}
