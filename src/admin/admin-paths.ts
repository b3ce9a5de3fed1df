/**
 * Where things are, relative to wherever the user mounted `outboxAdmin`: links, form actions,
 * redirects and the cookie's Path all start from the mount path, so the same app works at
 * `/admin`, `/ops/outbox` or `/`.
 */
import type { Context, Next } from 'hono';
import { basePath } from 'hono/route';

/**
 * The path the admin app is mounted at, without a trailing slash (`''` at the root). A configured
 * `basePath` wins: behind a proxy that strips a prefix, the browser's path is not the router's.
 */
export function mountPath(c: Context, configured: string | undefined): string {
  const path = configured ?? basePath(c);
  return path.replace(/\/+$/, '');
}

/** The dashboard's URLs under a mount path. */
export function adminPaths(base: string) {
  return {
    home: base || '/',
    login: `${base}/login`,
    logout: `${base}/logout`,
    messages: `${base}/dashboard/messages`,
    message: (id: string) => `${base}/dashboard/messages/${id}`,
    find: `${base}/dashboard/find`,
    /** The replay audit; `/dry-run` counts a selection, a POST here replays it. */
    replays: `${base}/dashboard/replays`,
    replay: (id: string) => `${base}/dashboard/replays/${id}`,
    /** Destination health; `/pause` and `/resume` are its rows' buttons. */
    destinations: `${base}/dashboard/destinations`,
    /** The JSON API's list, named on the page for scripts and the CLI. */
    apiMessages: `${base}/messages`,
  };
}

export type AdminPaths = ReturnType<typeof adminPaths>;

/**
 * A GET of the mount path with a trailing slash (`/admin/`) redirected (308, the query kept) to
 * the mount path itself, the dashboard's one home. Every other path passes on untouched, to the
 * admin's routes and then the host app's: a router matches `/admin` and `/admin/` apart, and
 * only a catch-all route under the mount path sees the second. Nothing without a token, where
 * the admin does not exist.
 */
export function mountPathWithSlash(configured: { token: string | undefined; basePath?: string }) {
  return async (c: Context, next: Next): Promise<Response | undefined> => {
    const routed = basePath(c).replace(/\/+$/, '');
    if (!configured.token || routed === '' || c.req.path !== `${routed}/`) {
      await next();
      return undefined;
    }
    const home = adminPaths(mountPath(c, configured.basePath)).home;
    return c.redirect(`${home}${new URL(c.req.url).search}`, 308);
  };
}
