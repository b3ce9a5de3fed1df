/**
 * What an anonymous sign-in post must pass before its body is read or its token compared: it
 * comes from this site (not a page elsewhere making the operator's browser post), and its body
 * is small. Both answer before the throttle sees anything, so a refused post is not counted as
 * a wrong token either.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { errorResponse } from '../http/json-errors.js';
import { isHttps } from './admin-auth.js';

/**
 * 4 KiB for a dashboard form: the sign-in form holds one token and the buttons one CSRF token,
 * each well under 100 bytes; the largest, a list's selection, holds at most 50 ids and the
 * filter, whose texts are bounded to fit (see FILTER_TEXT_MAX_CHARS). Anything larger is not a
 * form this dashboard drew, and it arrives before authentication, so it is refused rather than
 * read.
 */
export const ADMIN_FORM_MAX_BODY_BYTES = 4 * 1024;

/** Longest part of a refused `Origin` quoted back in the error: enough to spot a proxy's doing. */
const QUOTED_ORIGIN_CHARACTERS = 100;

/**
 * Refuses (413) a form body over {@link ADMIN_FORM_MAX_BODY_BYTES} while it streams: a declared
 * `Content-Length` over the bound is refused before a byte is read, and a chunked body is read
 * only up to the bound, then refused. `hono/body-limit` does both, and on `@hono/node-server`
 * the unread rest is not buffered: the server drains at most 64 MiB or 500 ms of it and then
 * closes the connection (test/admin/login-body-limit.test.ts posts 400 MB both ways and
 * measures the server's memory).
 */
export function adminFormBodyLimit(): MiddlewareHandler {
  return bodyLimit({
    maxSize: ADMIN_FORM_MAX_BODY_BYTES,
    onError: (c) =>
      errorResponse(
        c,
        413,
        `admin form bodies are limited to ${ADMIN_FORM_MAX_BODY_BYTES} bytes; this one is larger`,
      ),
  });
}

/**
 * Refuses (403) a sign-in post a browser made for another site. `Sec-Fetch-Site`, where the
 * browser sends it, decides: `same-origin` (or `none`, the user's own navigation) passes, any
 * other value is refused. Without it, an `Origin` must be this server's own. A post with neither
 * passes: browsers send `Origin` on every cross-site POST, so its absence means a client that is
 * not a browser (curl, a script), which no other site can drive.
 *
 * Why not `hono/csrf`: it refuses posts with neither header, and so every script. And why
 * `Sec-Fetch-Site` first: the admin's own pages are served `Referrer-Policy: no-referrer`,
 * under which a browser sends `Origin: null` even on a same-origin form post.
 *
 * This server's origin is the request URL's host (or `X-Forwarded-Host`) under https when
 * {@link isHttps} says so (`X-Forwarded-Proto` behind a TLS proxy). No page can set those headers
 * on a cross-site form post, so honouring them lets through only what a proxy says.
 */
export function refuseCrossSiteLogin(): MiddlewareHandler {
  return async (c, next) => {
    const site = c.req.header('sec-fetch-site');
    if (site !== undefined) {
      if (site === 'same-origin' || site === 'none') return next();
      return crossSite(c, `the browser says it comes from another site (Sec-Fetch-Site: ${site})`);
    }
    const origin = c.req.header('origin');
    if (origin !== undefined && !ownOrigins(c).includes(origin.toLowerCase())) {
      const quoted = JSON.stringify(origin.slice(0, QUOTED_ORIGIN_CHARACTERS));
      return crossSite(c, `its Origin ${quoted} is not this server's (${ownOrigins(c)[0]})`);
    }
    return next();
  };
}

/** The origins this request may come from: its own host, and the host a proxy forwarded. */
function ownOrigins(c: Context): string[] {
  const scheme = isHttps(c) ? 'https:' : new URL(c.req.url).protocol;
  const hosts = [new URL(c.req.url).host];
  const forwarded = c.req.header('x-forwarded-host')?.split(',')[0]?.trim();
  if (forwarded) hosts.push(forwarded);
  const origins: string[] = [];
  for (const host of hosts) {
    try {
      // Through the URL parser, so a default port and letter case read as a browser writes them.
      origins.push(new URL(`${scheme}//${host}`).origin.toLowerCase());
    } catch {
      // A host header no URL can hold matches no Origin.
    }
  }
  return origins;
}

function crossSite(c: Context, why: string): Response {
  return errorResponse(c, 403, `cross-site sign-in refused: ${why}; sign in from the admin page`);
}
