import { integerFromEnv, postgresUrlFromEnv, readEnv, switchFromEnv } from 'outbox-relay/env';
import { sesSenderFromEnv } from 'outbox-relay/ses';
import { webhookSenderFromEnv } from 'outbox-relay/webhook';
import { describe, expect, it } from 'vitest';

describe('settings read from an environment', () => {
  it('a mysql:// DATABASE_URL is named as the wrong kind of URL, not as missing', () => {
    expect(() => postgresUrlFromEnv({ DATABASE_URL: 'mysql://u:p@db/app' })).toThrow(
      'DATABASE_URL is a mysql:// URL, not a postgres:// URL: outbox-relay needs PostgreSQL',
    );
    expect(() => postgresUrlFromEnv({})).toThrow('DATABASE_URL must be set to a postgres:// URL');
    expect(() => postgresUrlFromEnv({ DATABASE_URL: 'db.example.com:5432' })).toThrow(
      /not a postgres:\/\/ URL/,
    );
    expect(postgresUrlFromEnv({ DATABASE_URL: ' postgresql://u@h/db ' })).toBe(
      'postgresql://u@h/db',
    );
  });

  it('blank and non-string values count as unset', () => {
    expect(readEnv({ A: '  ', B: 7, C: ' x ' }, 'A')).toBeUndefined();
    expect(readEnv({ B: 7 }, 'B')).toBeUndefined();
    expect(readEnv({ C: ' x ' }, 'C')).toBe('x');
  });

  it('whole numbers below their minimum, and switches that are neither on nor off, are refused by name', () => {
    expect(integerFromEnv({}, 'N', 50)).toBe(50);
    expect(() => integerFromEnv({ N: '2' }, 'N', 50, 23)).toThrow(
      'N must be a whole number of at least 23, got 2',
    );
    expect(switchFromEnv({ K: 'OFF' }, 'K', true)).toBe(false);
    expect(() => switchFromEnv({ K: 'sometimes' }, 'K', true)).toThrow('K must be on or off');
  });

  it("takes a Worker's env declared as an interface, as `wrangler types` writes it", () => {
    // An interface has no index signature: a reader typed `Record<string, unknown>` refused it.
    interface WorkerEnv {
      DATABASE_URL: string;
      OUTBOX_WEBHOOK_SECRET: string;
      OUTBOX_SUBREQUEST_BUDGET?: string;
    }
    const env: WorkerEnv = {
      DATABASE_URL: 'postgres://u:p@ep-x.example/db',
      OUTBOX_WEBHOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    };
    expect(postgresUrlFromEnv(env)).toBe('postgres://u:p@ep-x.example/db');
    expect(integerFromEnv(env, 'OUTBOX_SUBREQUEST_BUDGET', 50)).toBe(50);
    expect(readEnv(env, 'DATABASE_URL')).toBe('postgres://u:p@ep-x.example/db');
    expect(typeof webhookSenderFromEnv(env, { resolveHost: false })).toBe('function');
    expect(sesSenderFromEnv(env)).toBeUndefined();
  });
});
