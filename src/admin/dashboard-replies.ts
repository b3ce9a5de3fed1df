/**
 * What every dashboard route answers with: its paths, a page's frame, a page, a short notice, a
 * refused field.
 */
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AdminEnv, ResolvedAdmin } from './admin-options.js';
import { adminPaths } from './admin-paths.js';
import type { Markup } from './markup.js';
import { noticePage, type PageFrame } from './page-layout.js';

export function pathsOf(c: Context<AdminEnv>) {
  return adminPaths(c.get('adminBase'));
}

export async function frameOf(
  admin: ResolvedAdmin,
  c: Context<AdminEnv>,
  now: Date,
): Promise<PageFrame> {
  const auth = c.get('adminAuth');
  const session = auth?.method === 'cookie' ? auth.session : null;
  return {
    paths: pathsOf(c),
    now,
    csrf: session ? await admin.signer!.csrfToken(session) : null,
    canSignOut: session !== null,
  };
}

export function render(
  c: Context,
  status: ContentfulStatusCode,
  page: Markup,
): Response | Promise<Response> {
  return c.html(page, status);
}

export function notice(
  c: Context<AdminEnv>,
  status: ContentfulStatusCode,
  title: string,
  text: string,
): Response | Promise<Response> {
  return render(c, status, noticePage(pathsOf(c), title, text));
}

/** A 400 for a refused form field: names the field, and says that nothing changed. */
export function refuse(c: Context<AdminEnv>, field: string, problem: string) {
  return notice(c, 400, 'Bad request', `Field ${field}: ${problem}. Nothing was changed.`);
}
