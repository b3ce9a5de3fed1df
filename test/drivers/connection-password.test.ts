/**
 * A connection string without a password, the first mistake with Neon: through the real
 * drivers (Neon's HTTP driver and WebSocket `Pool` through the local Neon stand-in, pg against
 * PostgreSQL with SCRAM), the error names the missing password and how to add it, instead of
 * `missing authentication credentials`, a SCRAM complaint, or a crash.
 */

import { spawn } from 'node:child_process';
import { Socket } from 'node:net';
import { Pool as NeonPool, neon, neonConfig } from '@neondatabase/serverless';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyNeonLocalConfig, type NeonProxy, startNeonProxy } from '../../src/dev/neon-proxy.js';
import { urlHasPassword } from '../../src/drivers/connection-password.js';
import { neonHttpExecutor } from '../../src/drivers/neon-http.js';
import { neonWsExecutor } from '../../src/drivers/neon-ws.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { isRetryableDatabaseError } from '../../src/drivers/postgres-errors.js';
import { postgresUrlFromEnv } from '../../src/runtime/env.js';
import { REPO_ROOT, runOutbox } from '../cli/outbox-cli.js';
import { useTestDatabase } from '../support/database.js';

const database = useTestDatabase();
let proxy: NeonProxy;
let passwordless: string;

/** What every passwordless failure must say. */
const SAYS_HOW =
  /has no password, and the database asks for one .*postgres:\/\/USER:PASSWORD@HOST\/DATABASE/;

beforeAll(async () => {
  proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
  applyNeonLocalConfig(neonConfig, proxy);
  const url = new URL(database.url);
  url.password = '';
  passwordless = url.toString();
});
afterAll(async () => {
  await proxy?.close();
});

describe('a connection string without a password', () => {
  it('over Neon’s HTTP driver is a ConfigurationError saying how to add it, not retried', async () => {
    const error = await neonHttpExecutor(neon(passwordless))
      .query('SELECT 1')
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      name: 'ConfigurationError',
      code: 'OUTBOX_CONFIGURATION',
      message: expect.stringMatching(SAYS_HOW),
    });
    expect(error).toHaveProperty('message', expect.stringMatching(/^the connection string /));
    expect((error as Error).cause).toMatchObject({
      message: 'missing authentication credentials',
    });
    expect(isRetryableDatabaseError(error)).toBe(false);
  });

  it('over Neon’s WebSocket Pool is refused when the executor is made, before the driver can crash', () => {
    const pool = new NeonPool({ connectionString: passwordless });
    expect(() => neonWsExecutor(pool)).toThrow(SAYS_HOW);
    expect(() => neonWsExecutor(pool)).toThrow(/^the Pool's connectionString /);
    // A password given beside the URL is one.
    const withOption = new NeonPool({ connectionString: passwordless, password: 'postgres' });
    expect(() => neonWsExecutor(withOption)).not.toThrow();
  });

  it('over pg against a SCRAM server is a ConfigurationError saying how to add it', async () => {
    // pg leaves the socket open after its SCRAM complaint, and the server holds the half-made
    // session until its authentication timeout (a minute): close them ourselves.
    const sockets: Socket[] = [];
    const pool = new pg.Pool({
      connectionString: passwordless,
      stream: () => {
        const socket = new Socket();
        sockets.push(socket);
        return socket;
      },
    });
    try {
      const error = await pgExecutor(pool)
        .query('SELECT 1')
        .catch((caught: unknown) => caught);
      expect(error).toMatchObject({
        code: 'OUTBOX_CONFIGURATION',
        message: expect.stringMatching(SAYS_HOW),
      });
      expect((error as Error).cause).toMatchObject({
        message: expect.stringContaining('client password must be a string'),
      });
    } finally {
      await pool.end();
      for (const socket of sockets) socket.destroy();
    }
  });

  it('in DATABASE_URL is refused by name where the URL goes to Neon (requirePassword)', () => {
    expect(() =>
      postgresUrlFromEnv({ DATABASE_URL: passwordless }, 'DATABASE_URL', {
        requirePassword: true,
      }),
    ).toThrow(/^DATABASE_URL has no password, and the database asks for one/);
    expect(
      postgresUrlFromEnv({ DATABASE_URL: database.url }, 'DATABASE_URL', { requirePassword: true }),
    ).toBe(database.url);
    // Without the option it is pg's business (PGPASSWORD, ~/.pgpass, trust).
    expect(postgresUrlFromEnv({ DATABASE_URL: passwordless })).toBe(passwordless);
  });
});

describe('where users meet it first', () => {
  it('outbox (the CLI) names DATABASE_URL and how to add the password', async () => {
    const result = await runOutbox(['stats'], { DATABASE_URL: passwordless });
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(/^outbox: cannot connect to the database at .*: DATABASE_URL /);
    expect(result.stderr).toMatch(SAYS_HOW);
  });

  it('npm start names DATABASE_URL and how to add the password, before starting anything', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'examples/reference-service/start.ts'],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, DATABASE_URL: passwordless, PORT: '0', OUTBOX_NEON_PROXY_PORT: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(1);
    expect(stderr).toMatch(/npm start failed: ConfigurationError: DATABASE_URL has no password/);
    expect(stderr).toMatch(SAYS_HOW);
  });
});

describe('urlHasPassword', () => {
  it.each([
    ['postgres://u:p@h/db', true],
    ['postgresql://u:p%40ss@h:5432/db?sslmode=require', true],
    ['postgres://u@h/db?password=p', true],
    ['postgres://u@h/db', false],
    ['postgres://u:@h/db', false],
    ['postgresql://h/db', false],
    // Not a URL it can read: it does not claim the password is missing.
    ['host=h user=u dbname=db', true],
  ])('%s: %s', (url, expected) => {
    expect(urlHasPassword(url)).toBe(expected);
  });
});
