/** Requests and page readings the dashboard replay tests share (app.request, no browser). */
import { expect } from 'vitest';
import { form, type mountAdmin } from './admin-harness.js';

type App = ReturnType<typeof mountAdmin>;

/** A form post with the session's cookie; the answer and its text. */
export async function postForm(
  app: App,
  path: string,
  fields: Record<string, string>,
  cookie: string,
) {
  const response = await app.request(path, form(fields, { cookie }));
  return { response, text: await response.text() };
}

export async function getPage(app: App, path: string, cookie: string) {
  const response = await app.request(path, { headers: { cookie } });
  return { status: response.status, text: await response.text() };
}

/** The confirmation page's hidden fields, as the browser would post them back. */
export function carried(page: string): { selection: string; seen: string } {
  const selection = /name="selection" value="([^"]*)"/.exec(page)?.[1];
  const seen = /name="seen" value="([^"]*)"/.exec(page)?.[1];
  expect(selection, 'the confirmation carries the selection').toBeDefined();
  const unescaped = selection!.replaceAll('&quot;', '"').replaceAll('&amp;', '&');
  return { selection: unescaped, seen: seen! };
}

/** The message ids of a page's table rows (a list, or a dry run's sample), in order. */
export function rowIds(page: string): string[] {
  return [...page.matchAll(/<tr data-message-id="(\d+)"/g)].map((match) => match[1]!);
}
