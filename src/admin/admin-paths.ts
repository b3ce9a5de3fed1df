/**
 * Where things are, relative to wherever the user mounted `outboxAdmin`: links, form actions,
 * redirects and the cookie's Path all start from the mount path, so the same app works at
 * `/admin`, `/ops/outbox` or `/`.
 */
import type { Context } from 'hono';
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
    /** The JSON API's list, named on the page for scripts and the CLI. */
    apiMessages: `${base}/messages`,
  };
}

export type AdminPaths = ReturnType<typeof adminPaths>;
