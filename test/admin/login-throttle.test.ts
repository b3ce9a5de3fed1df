/**
 * Wrong admin tokens are throttled per client address; the right token never is. The attacks
 * these tests replay: wrong tokens sent from the operator's own address (a proxy every client
 * shares, a page in the operator's browser) used to lock the operator out, and wrong tokens
 * sent all at once used to slip past the count.
 */
import { describe, expect, it } from 'vitest';
import {
  FAILED_LOGIN_FREE_ATTEMPTS,
  FailedLoginThrottle,
  type OutboxAdminOptions,
} from '../../src/admin/index.js';
import type { Logger } from '../../src/core/ports.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock } from '../support/drain-fixtures.js';
import { ADMIN_TOKEN, CLIENT_HEADER, form, mountAdmin } from './admin-harness.js';

const database = useTestDatabase();

function warningsLogger(): Logger & { warnings: unknown[] } {
  const warnings: unknown[] = [];
  return {
    warnings,
    debug() {},
    info() {},
    warn(_message, fields) {
      warnings.push(fields);
    },
    error() {},
  };
}

function clientOf(options: Partial<OutboxAdminOptions> = {}) {
  const app = mountAdmin(database, options);
  return {
    login: (client: string, token: string) =>
      app.request('/admin/login', form({ token }, { [CLIENT_HEADER]: client })),
    scrape: (client: string, token: string) =>
      app.request('/admin/metrics', {
        headers: { authorization: `Bearer ${token}`, [CLIENT_HEADER]: client },
      }),
  };
}

function countStatuses(responses: Response[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const { status } of responses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

describe('failed logins', () => {
  it('wrong tokens meet a growing wait, and the right token signs in during it', async () => {
    const clock = fakeClock();
    const { login } = clientOf({ clock });

    for (let attempt = 1; attempt <= FAILED_LOGIN_FREE_ATTEMPTS; attempt++) {
      expect((await login('guesser', `guess-${attempt}`)).status).toBe(401);
    }
    // The first wrong token past the free ones starts a 1 s wait...
    expect((await login('guesser', 'guess-4')).status).toBe(401);
    const throttled = await login('guesser', 'guess-during-the-wait');
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toBe('1');
    expect(throttled.headers.get('set-cookie')).toBeNull();
    expect(await throttled.text()).toContain('The right token still signs in');
    // ...which holds wrong tokens only: the right one is compared first and let in.
    const signedIn = await login('guesser', ADMIN_TOKEN);
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get('set-cookie')).toContain('outbox_admin=');

    // Wrong tokens during a wait do not lengthen it; the next one after it doubles it: 2 s, 4 s.
    clock.advance(1000);
    expect((await login('guesser', 'guess-5')).status).toBe(401);
    clock.advance(1000);
    expect((await login('guesser', 'guess-6')).status).toBe(429);
    clock.advance(1000);
    expect((await login('guesser', 'guess-7')).status).toBe(401);
    const longer = await login('guesser', 'guess-8');
    expect(longer.status).toBe(429);
    expect(longer.headers.get('retry-after')).toBe('4');

    // Another address is not held up.
    expect((await login('someone-else', 'typo')).status).toBe(401);
  });

  it('counts wrong Bearer tokens and wrong form tokens in one record, and lets the right one through both', async () => {
    const clock = fakeClock();
    const { login, scrape } = clientOf({ clock });
    for (let attempt = 0; attempt <= FAILED_LOGIN_FREE_ATTEMPTS; attempt++) {
      expect((await scrape('script', `wrong-${attempt}`)).status).toBe(401);
    }
    const throttled = await scrape('script', 'wrong-again');
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toBe('1');
    expect(throttled.headers.get('content-type')).toMatch(/^application\/json/);
    expect((await login('script', 'wrong-form-token')).status).toBe(429);
    expect((await scrape('script', ADMIN_TOKEN)).status).toBe(200);
    expect((await login('script', ADMIN_TOKEN)).status).toBe(303);
    clock.advance(1000);
    expect((await scrape('script', 'wrong-after-the-wait')).status).toBe(401);
  });

  it("the correct token signs in while an attacker's wrong tokens from the same address are being throttled", async () => {
    const { login, scrape } = clientOf({ clock: fakeClock() });
    // Everyone behind one proxy: the attacker and the operator share the address.
    const proxy = 'shared-proxy';
    for (let attempt = 0; attempt < 10; attempt++) await login(proxy, `attack-${attempt}`);
    expect((await login(proxy, 'attack-check')).status).toBe(429);

    const attack = Array.from({ length: 30 }, (_, index) => login(proxy, `attack-more-${index}`));
    const operator = login(proxy, ADMIN_TOKEN);
    const scraper = scrape(proxy, ADMIN_TOKEN);
    const [signedIn, scraped, ...refused] = await Promise.all([operator, scraper, ...attack]);
    expect(signedIn!.status).toBe(303);
    expect(signedIn!.headers.get('set-cookie')).toContain('outbox_admin=');
    expect(scraped!.status).toBe(200);
    expect(await scraped!.text()).toContain('outbox_');
    expect(countStatuses(refused)).toEqual({ 429: 30 });
    // The operator's sign-in did not clear the attacker's record.
    expect((await login(proxy, 'attack-after')).status).toBe(429);
  });

  it('60 concurrent wrong logins: only the free attempts and the one that starts the wait are answered 401', async () => {
    const logger = warningsLogger();
    const { login } = clientOf({ logger, clock: fakeClock() });
    const responses = await Promise.all(
      Array.from({ length: 60 }, (_, index) => login('burst', `wrong-${index}`)),
    );
    expect(countStatuses(responses)).toEqual({
      401: FAILED_LOGIN_FREE_ATTEMPTS + 1,
      429: 60 - FAILED_LOGIN_FREE_ATTEMPTS - 1,
    });
    // Every wrong token is logged with its address, throttled or not.
    expect(logger.warnings).toHaveLength(60);
    expect(logger.warnings[0]).toMatchObject({ client: 'burst', via: 'form' });
  });

  it('shares one record between outboxAdmin and a throttle passed in', async () => {
    const clock = fakeClock();
    const throttle = new FailedLoginThrottle(clock);
    const { scrape } = clientOf({ throttle, clock });
    for (let attempt = 0; attempt <= FAILED_LOGIN_FREE_ATTEMPTS; attempt++) {
      throttle.recordFailure('elsewhere');
    }
    expect((await scrape('elsewhere', 'wrong')).status).toBe(429);
    expect((await scrape('elsewhere', ADMIN_TOKEN)).status).toBe(200);
  });
});
