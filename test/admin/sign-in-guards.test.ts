/**
 * What an anonymous sign-in post must pass before the admin reads its body or compares its
 * token: it comes from this site, and its body is small.
 */
import { describe, expect, it } from 'vitest';
import { ADMIN_FORM_MAX_BODY_BYTES } from '../../src/admin/index.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock } from '../support/drain-fixtures.js';
import { ADMIN_TOKEN, CLIENT_HEADER, form, mountAdmin, signIn } from './admin-harness.js';

const database = useTestDatabase();

describe('sign-in from another site', () => {
  it.each([
    ['an Origin of another site', { origin: 'https://evil.example' }],
    ['an Origin on another port', { origin: 'http://localhost:8080' }],
    ['an opaque Origin (null) and no Sec-Fetch-Site', { origin: 'null' }],
    ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site' }],
    ['Sec-Fetch-Site: same-site', { 'sec-fetch-site': 'same-site' }],
    [
      'a same-origin Origin but Sec-Fetch-Site: cross-site',
      { origin: 'http://localhost', 'sec-fetch-site': 'cross-site' },
    ],
  ])(
    'refuses a sign-in post with %s (403), the right token unread and nothing counted',
    async (_label, headers) => {
      const app = mountAdmin(database);
      const response = await app.request('/admin/login', form({ token: ADMIN_TOKEN }, headers));
      expect(response.status).toBe(403);
      expect(response.headers.get('set-cookie')).toBeNull();
      expect((await response.json()).error).toMatch(/^cross-site sign-in refused/);
    },
  );

  it('does not count refused cross-site posts as wrong tokens, so a hostile page cannot build a wait', async () => {
    const app = mountAdmin(database, { clock: fakeClock() });
    const headers = { origin: 'https://evil.example', [CLIENT_HEADER]: 'operator-browser' };
    for (let attempt = 0; attempt < 20; attempt++) {
      const response = await app.request('/admin/login', form({ token: `x${attempt}` }, headers));
      expect(response.status).toBe(403);
    }
    const typo = await app.request(
      '/admin/login',
      form({ token: 'typo' }, { [CLIENT_HEADER]: 'operator-browser' }),
    );
    expect(typo.status).toBe(401);
  });

  it.each([
    ['the same origin', { origin: 'http://localhost', 'sec-fetch-site': 'same-origin' }],
    [
      "the admin's own page, whose no-referrer policy makes the browser send Origin: null",
      { origin: 'null', 'sec-fetch-site': 'same-origin' },
    ],
    ['no Origin (curl, a script)', {}],
    ['Sec-Fetch-Site: none (typed by the user)', { 'sec-fetch-site': 'none' }],
  ])('signs in a post from %s', async (_label, headers) => {
    const app = mountAdmin(database);
    const response = await app.request('/admin/login', form({ token: ADMIN_TOKEN }, headers));
    expect(response.status).toBe(303);
  });

  it('takes the origin a TLS-terminating proxy forwards, and refuses the plain-http one there', async () => {
    const app = mountAdmin(database);
    const behindProxy = {
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'ops.example.com',
    };
    const proxied = await app.request(
      'http://backend:3000/admin/login',
      form({ token: ADMIN_TOKEN }, { ...behindProxy, origin: 'https://ops.example.com' }),
    );
    expect(proxied.status).toBe(303);
    const downgraded = await app.request(
      'http://backend:3000/admin/login',
      form({ token: ADMIN_TOKEN }, { ...behindProxy, origin: 'http://ops.example.com' }),
    );
    expect(downgraded.status).toBe(403);
  });
});

describe('sign-in bodies', () => {
  const oversized = 'a'.repeat(ADMIN_FORM_MAX_BODY_BYTES);

  /** `token=aaa...`, 1 MiB in 1 KiB chunks made as they are read; counts what was read. */
  function countedForm() {
    const chunk = new TextEncoder().encode('a'.repeat(1024));
    const counter = { chunksRead: 0 };
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('token='));
      },
      pull(controller) {
        if (counter.chunksRead === 1024) return controller.close();
        counter.chunksRead += 1;
        controller.enqueue(chunk);
      },
    });
    return { body, counter };
  }

  function post(body: ReadableStream<Uint8Array>, headers: Record<string, string> = {}) {
    return {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body,
      duplex: 'half',
    } as RequestInit;
  }

  it('refuses a declared Content-Length over the bound with 413 before reading the body', async () => {
    const app = mountAdmin(database);
    const { body, counter } = countedForm();
    const declared = { 'content-length': String(1024 * 1024 + 'token='.length) };
    const response = await app.request('/admin/login', post(body, declared));
    expect(response.status).toBe(413);
    expect((await response.json()).error).toContain(`${ADMIN_FORM_MAX_BODY_BYTES} bytes`);
    // A stream may be pulled once ahead when the request is built; nothing past that is read.
    expect(counter.chunksRead).toBeLessThanOrEqual(1);
  });

  it('refuses a chunked body once it passes the bound, reading no further', async () => {
    const app = mountAdmin(database);
    const { body, counter } = countedForm();
    const response = await app.request('/admin/login', post(body));
    expect(response.status).toBe(413);
    // The bound, plus the one chunk that crossed it and one the stream pulled ahead.
    expect(counter.chunksRead * 1024).toBeLessThanOrEqual(ADMIN_FORM_MAX_BODY_BYTES + 2 * 1024);
  });

  it('bounds the forms a signed-in page posts too, and still takes a normal one', async () => {
    const app = mountAdmin(database);
    const { cookie, csrf } = await signIn(app);
    const big = await app.request(
      '/admin/dashboard/messages/retry-dead',
      form({ csrf, padding: oversized }, { cookie }),
    );
    expect(big.status).toBe(413);
    const normal = await app.request(
      '/admin/dashboard/messages/retry-dead',
      form({ csrf }, { cookie }),
    );
    expect(normal.status).toBe(303);
  });
});
