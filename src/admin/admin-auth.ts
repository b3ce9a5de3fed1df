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
import { type Logger, silentLogger } from '../core/ports.js';
import { errorResponse } from '../http/json-errors.js';
import type { AdminEnv, ResolvedAdmin } from './admin-options.js';
import { mountPath } from './admin-paths.js';
import { ADMIN_SESSION_COOKIE, type AdminSession } from './admin-session.js';
import { type ClientAddress, defaultClientAddress } from './client-address.js';
import { FailedLoginThrottle, type FailedLoginVerdict, UNKNOWN_CLIENT } from './login-throttle.js';

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
 * wrong Bearer token (401, or 429 while its address waits: see login-throttle), a cookie state
 * change without its CSRF token (403). Anonymous requests pass on; {@link requireAdmin} stops
 * them.
 */
export function identifyAdmin(admin: ResolvedAdmin): MiddlewareHandler<AdminEnv> {
  return async (c, next) => {
    const { signer } = admin;
    if (!admin.token || !signer) return errorResponse(c, 404, 'not found');
    const given = bearerToken(c);
    if (given !== undefined) {
      const check = await checkAdminToken(admin, c, given, 'bearer');
      if (!check.ok) return refusedToken(c, check);
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

/** What checks a presented admin token: the token, and the throttle wrong ones are counted in. */
export interface AdminTokenGuard {
  token: string | undefined;
  throttle: FailedLoginThrottle;
  clientAddress: ClientAddress;
  logger: Logger;
}

/** A token's outcome: let in, or refused with the throttle's verdict (401, or 429 if throttled). */
export type AdminTokenCheck = { ok: true } | ({ ok: false } & FailedLoginVerdict);

/**
 * Compares `given` with the admin token in constant time, first: the right token is let in
 * whatever the throttle holds, so wrong tokens from the operator's address (a proxy everyone
 * shares, a hostile page) cannot lock the operator out. A wrong token is then counted and judged
 * by the throttle, with no await between the comparison's result and the record, and logged.
 */
export async function checkAdminToken(
  guard: AdminTokenGuard,
  c: Context,
  given: string,
  via: 'bearer' | 'form',
): Promise<AdminTokenCheck> {
  const { token } = guard;
  if (token && given !== '' && (await tokensMatch(given, token))) return { ok: true };
  const address = guard.clientAddress(c) || UNKNOWN_CLIENT;
  const verdict = guard.throttle.recordFailure(address);
  guard.logger.warn('admin sign-in with a wrong token', { client: address, via, ...verdict });
  return { ok: false, ...verdict };
}

/** The token of an `Authorization: Bearer <token>` header; undefined for any other header. */
function bearerToken(c: Context): string | undefined {
  const header = c.req.header('authorization');
  if (header === undefined || !/^bearer /i.test(header)) return undefined;
  return header.slice('bearer '.length).trim();
}

/** A wrong Bearer token's answer: 429 with `Retry-After` while its address waits, else 401. */
function refusedToken(c: Context, verdict: FailedLoginVerdict): Response {
  return verdict.throttled ? tooManyAttempts(c, verdict.waitMs) : unauthorized(c);
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

/**
 * 429 with `Retry-After` in whole seconds: wrong tokens from this address are refused for that
 * long. The right token is still let in (see login-throttle).
 */
export function tooManyAttempts(c: Context, waitMs: number): Response {
  const seconds = Math.ceil(waitMs / 1000);
  c.header('Retry-After', String(seconds));
  return errorResponse(
    c,
    429,
    `too many wrong admin tokens from this address: wrong tokens are refused for ${seconds} s`,
  );
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

/** Options of {@link adminBearerAuth}; each defaults as in `outboxAdmin`. */
export interface AdminBearerAuthOptions {
  /**
   * The record wrong tokens are counted in. Pass the one given to `outboxAdmin({ throttle })`
   * so both count against it; default, a throttle of this guard's own.
   */
  throttle?: FailedLoginThrottle;
  /** The client address wrong tokens are counted under. Default: `defaultClientAddress`. */
  clientAddress?: ClientAddress;
  /** Where wrong tokens are logged. Default: nowhere. */
  logger?: Logger;
}

/**
 * A Bearer-token guard for a host app's own admin routes beside `outboxAdmin` (the reference
 * service's `POST /admin/migrate` and `POST /webhook-endpoints`): 404 without a token
 * configured, 401 for a missing or wrong one, 429 for a wrong one while its address waits, in
 * the same JSON shape. Wrong tokens go through the same throttle as the admin's: the right token
 * is always let in, wrong ones are counted per client address.
 *
 * @example
 * import { adminBearerAuth, FailedLoginThrottle, outboxAdmin } from 'outbox-relay/admin';
 *
 * const throttle = new FailedLoginThrottle();
 * app.route('/admin', outboxAdmin({ store, token: env.ADMIN_TOKEN, throttle }));
 * app.post('/webhook-endpoints', adminBearerAuth(env.ADMIN_TOKEN, { throttle }), (c) =>
 *   c.json({ registered: true }, 201),
 * );
 */
export function adminBearerAuth(
  token: string | undefined,
  options: AdminBearerAuthOptions = {},
): MiddlewareHandler {
  const guard: AdminTokenGuard = {
    token: token || undefined,
    throttle: options.throttle ?? new FailedLoginThrottle(),
    clientAddress: options.clientAddress ?? defaultClientAddress,
    logger: options.logger ?? silentLogger,
  };
  return async (c, next) => {
    if (!guard.token) return errorResponse(c, 404, 'not found');
    const given = bearerToken(c);
    if (given === undefined) return unauthorized(c);
    const check = await checkAdminToken(guard, c, given, 'bearer');
    if (!check.ok) return refusedToken(c, check);
    return next();
  };
}
