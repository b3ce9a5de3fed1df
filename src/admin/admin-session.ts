/**
 * Dashboard sessions without server storage: the cookie holds a random session id and its issue
 * and expiry times, signed with HMAC-SHA-256 (Web Crypto: Workers, Lambda and Node alike) under
 * a key derived from the admin token. It never holds the token, so a leaked cookie (a log, a
 * screenshot of devtools) is worth at most one session, not the token; changing the token ends
 * every session at once, because every signature was made with the old key.
 *
 * Why these choices:
 * - Expiry is short and sliding ({@link SESSION_IDLE_MS}, refreshed while in use) under a hard cap
 *   ({@link SESSION_MAX_MS}): a forgotten tab stops working on its own.
 * - Logout must end the session even if someone copied the cookie, and a signature alone cannot
 *   be withdrawn. So logout records the session id in a {@link RevokedSessions} set until the
 *   session would have expired anyway. `outboxAdmin` has no storage of its own and we add no
 *   table for this: the default set lives in memory, which is exact on one Node process and per
 *   isolate on Workers or Lambda. A deployment with many instances passes its own (KV, Redis, a
 *   table of its choosing); entries expire with the session, so any TTL store fits.
 */

/** The session cookie's name. */
export const ADMIN_SESSION_COOKIE = 'outbox_admin';

/**
 * 30 minutes without a request ends a session: long enough to read an incident's messages,
 * short enough that an unattended browser does not stay signed in.
 */
export const SESSION_IDLE_MS = 30 * 60 * 1000;

/** Twelve hours, a working day, ends a session however busy: then the token is asked again. */
export const SESSION_MAX_MS = 12 * 60 * 60 * 1000;

/** A signed-in browser, as read back from its cookie. */
export interface AdminSession {
  /** Random, 128 bits: what logout revokes. */
  id: string;
  /** Epoch ms. */
  issuedAt: number;
  /** Epoch ms; slides forward while in use, never past `issuedAt + SESSION_MAX_MS`. */
  expiresAt: number;
}

/** Sessions ended by logout before their expiry. See the module comment for why it exists. */
export interface RevokedSessions {
  /** Remember `sessionId` as ended until `until` (after which its signature has expired). */
  revoke(sessionId: string, until: Date): void | Promise<void>;
  isRevoked(sessionId: string, now: Date): boolean | Promise<boolean>;
}

/**
 * The default {@link RevokedSessions}: in memory, per process or isolate. Bounded by the number
 * of logouts within {@link SESSION_MAX_MS}, which only someone holding the token can cause.
 */
export function memoryRevokedSessions(): RevokedSessions {
  const revoked = new Map<string, number>();
  return {
    revoke(sessionId, until) {
      revoked.set(sessionId, until.getTime());
    },
    isRevoked(sessionId, now) {
      for (const [id, until] of revoked) if (until <= now.getTime()) revoked.delete(id);
      return revoked.has(sessionId);
    },
  };
}

const SESSION_VERSION = 'v1';
const KEY_LABEL = 'outbox-relay admin session key v1';
const SESSION_ID_PATTERN = /^[A-Za-z0-9_-]{22}$/;
const TIME_PATTERN = /^[0-9a-z]{1,11}$/;

/** Issues, reads and refreshes session cookies, and the CSRF token bound to each session. */
export class SessionSigner {
  private key: Promise<CryptoKey> | undefined;

  constructor(private readonly adminToken: string) {}

  /** A new session from `now`, and the cookie value that carries it. */
  async issue(now: Date): Promise<{ session: AdminSession; cookie: string }> {
    const id = base64url(crypto.getRandomValues(new Uint8Array(16)));
    const issuedAt = now.getTime();
    const session = {
      id,
      issuedAt,
      expiresAt: Math.min(issuedAt + SESSION_IDLE_MS, cap(issuedAt)),
    };
    return { session, cookie: await this.encode(session) };
  }

  /**
   * The same session with its idle expiry moved forward, once half of it has passed (so a page
   * load does not set a cookie every time); null when there is nothing to refresh.
   */
  async refresh(
    session: AdminSession,
    now: Date,
  ): Promise<{ session: AdminSession; cookie: string } | null> {
    const expiresAt = Math.min(now.getTime() + SESSION_IDLE_MS, cap(session.issuedAt));
    if (expiresAt - session.expiresAt < SESSION_IDLE_MS / 2) return null;
    const refreshed = { ...session, expiresAt };
    return { session: refreshed, cookie: await this.encode(refreshed) };
  }

  /** The session in a cookie value, or null when it is malformed, forged or expired. */
  async read(cookie: string, now: Date): Promise<AdminSession | null> {
    const parts = cookie.split('.');
    if (parts.length !== 5 || parts[0] !== SESSION_VERSION) return null;
    const [, id, issuedText, expiresText, mac] = parts as [string, string, string, string, string];
    if (!SESSION_ID_PATTERN.test(id) || !TIME_PATTERN.test(issuedText)) return null;
    if (!TIME_PATTERN.test(expiresText)) return null;
    const signature = fromBase64url(mac);
    if (!signature) return null;
    const signed = new TextEncoder().encode(
      `${SESSION_VERSION}.${id}.${issuedText}.${expiresText}`,
    );
    if (!(await crypto.subtle.verify('HMAC', await this.signingKey(), signature, signed))) {
      return null;
    }
    const session = {
      id,
      issuedAt: Number.parseInt(issuedText, 36),
      expiresAt: Number.parseInt(expiresText, 36),
    };
    const at = now.getTime();
    if (at >= session.expiresAt || at >= cap(session.issuedAt)) return null;
    return session;
  }

  /**
   * The CSRF token for a session: an HMAC of its id. A page served to the session embeds it; a
   * cross-site form cannot know it, and it dies with the session.
   */
  async csrfToken(session: AdminSession): Promise<string> {
    return base64url(await this.mac(`csrf.${session.id}`));
  }

  async csrfTokenMatches(session: AdminSession, given: string): Promise<boolean> {
    const signature = fromBase64url(given);
    if (!signature) return false;
    const data = new TextEncoder().encode(`csrf.${session.id}`);
    return crypto.subtle.verify('HMAC', await this.signingKey(), signature, data);
  }

  private async encode(session: AdminSession): Promise<string> {
    const body = `${SESSION_VERSION}.${session.id}.${session.issuedAt.toString(36)}.${session.expiresAt.toString(36)}`;
    return `${body}.${base64url(await this.mac(body))}`;
  }

  private async mac(text: string): Promise<Uint8Array> {
    const key = await this.signingKey();
    return new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(text)));
  }

  /** HMAC(token, label) as the key: the token itself signs nothing that leaves the server. */
  private signingKey(): Promise<CryptoKey> {
    this.key ??= (async () => {
      const tokenKey = await hmacKey(new TextEncoder().encode(this.adminToken));
      const derived = await crypto.subtle.sign(
        'HMAC',
        tokenKey,
        new TextEncoder().encode(KEY_LABEL),
      );
      return hmacKey(new Uint8Array(derived));
    })();
    return this.key;
  }
}

function cap(issuedAt: number): number {
  return issuedAt + SESSION_MAX_MS;
}

function hmacKey(raw: Uint8Array<ArrayBuffer>): Promise<CryptoKey> {
  return crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
    'verify',
  ]);
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replaceAll('+', '-')
    .replaceAll('/', '_')
    .replace(/=+$/, '');
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> | null {
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(text)) return null;
  try {
    const binary = atob(text.replaceAll('-', '+').replaceAll('_', '/'));
    return Uint8Array.from(binary, (char) => char.charCodeAt(0));
  } catch {
    return null;
  }
}
