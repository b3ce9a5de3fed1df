/**
 * The local Neon stand-in answers as Neon does where our code can tell the difference:
 * sessions come back reset, connect-time failures are HTTP 500s the driver cannot read a code
 * from, authentication is Neon's own reply, a client that goes away rolls its batch back, and
 * the size caps and odd requests get Neon's statuses. Driven through the real
 * @neondatabase/serverless driver against real PostgreSQL (docs/local-neon-proxy.md).
 */
import { randomBytes } from 'node:crypto';
import { type NeonDbError, neon, neonConfig } from '@neondatabase/serverless';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyNeonLocalConfig, type NeonProxy, startNeonProxy } from '../../src/dev/neon-proxy.js';
import { isRetryableDatabaseError } from '../../src/drivers/postgres-errors.js';
import { useTestDatabase } from '../support/database.js';
import { waitFor } from '../support/wait-for.js';

const database = useTestDatabase({ migrated: false });

/** Neon's cap on request and response bodies (10 MiB). */
const TEN_MIB = 10 * 1024 * 1024;

/** Enough requests that several land on each pooled session the stand-in keeps. */
const FOLLOW_UP_REQUESTS = 12;

async function rejectionOf(promise: Promise<unknown>): Promise<NeonDbError> {
  try {
    await promise;
  } catch (error) {
    return error as NeonDbError;
  }
  throw new Error('expected the query to fail, but it succeeded');
}

function withLogin(url: string, user: string, password: string): string {
  const parsed = new URL(url);
  parsed.username = user;
  parsed.password = password;
  return parsed.toString();
}

describe('local Neon stand-in, compared with Neon', () => {
  let url: string;
  let proxy: NeonProxy;
  let direct: pg.Client;
  let table: string;

  beforeAll(async () => {
    url = database.url;
    proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
    applyNeonLocalConfig(neonConfig, proxy);
    direct = new pg.Client({ connectionString: url });
    await direct.connect();
    table = `parity_${randomBytes(4).toString('hex')}`;
    await direct.query(`create table ${table} (id int primary key)`);
  });

  afterAll(async () => {
    await direct?.end();
    await proxy?.close();
  });

  async function ids(): Promise<number[]> {
    const { rows } = await direct.query<{ id: number }>(`select id from ${table} order by id`);
    return rows.map((row) => row.id);
  }

  /** Posts a hand-written request to the stand-in's /sql, as the driver would. */
  async function postSql(body: string, headers: Record<string, string> = {}) {
    const response = await fetch(`${proxy.url}/sql`, {
      method: 'POST',
      headers: {
        'neon-connection-string': url,
        'neon-raw-text-output': 'true',
        'content-type': 'application/json',
        ...headers,
      },
      body,
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  describe('session state', () => {
    it('resets search_path, advisory locks, temp tables and LISTEN before the next requests', async () => {
      const sql = neon(url);
      await sql`select set_config('search_path', 'pg_catalog', false)`;
      await sql`select pg_advisory_lock(4242)`;
      await sql`create temp table leftover (n int)`;
      await sql`listen parity_channel`;

      await waitFor('the advisory lock to be released', async () => {
        const { rows } = await direct.query(
          `select 1 from pg_locks where locktype = 'advisory' and objid = 4242`,
        );
        return rows.length === 0;
      });
      for (let request = 0; request < FOLLOW_UP_REQUESTS; request += 1) {
        const [state] = await sql`select current_setting('search_path') as search_path,
          to_regclass('pg_temp.leftover') as temp_table,
          (select count(*)::int from pg_listening_channels()) as channels`;
        expect(state).toEqual({ search_path: '"$user", public', temp_table: null, channels: 0 });
      }
    });

    it('starts sessions in GMT without the driver application_name, like a Neon compute', async () => {
      const [settings] = await neon(url)`select current_setting('TimeZone') as zone,
        current_setting('application_name') as name`;
      expect(settings).toEqual({ zone: 'GMT', name: '' });
    });
  });

  describe('connect-time failures', () => {
    it('answers a connect-time SQLSTATE with HTTP 500, so no code reaches the driver', async () => {
      proxy.simulateConnectFailure({
        kind: 'postgres',
        code: '57P03',
        message: 'the database system is starting up',
      });
      try {
        const error = await rejectionOf(neon(url)`select 1`);
        expect(error.message).toMatch(/^Server error \(HTTP status 500\): /);
        expect(error.message).toContain('"code":"57P03"');
        expect(error.code).toBeUndefined();
        expect(isRetryableDatabaseError(error)).toBe(true);
      } finally {
        proxy.simulateConnectFailure(undefined);
      }
      expect(await neon(url)`select 1 as ok`).toEqual([{ ok: 1 }]);
    });

    it('reports a real 53300 from Postgres at connect the same way', async () => {
      const role = `parity_full_${randomBytes(4).toString('hex')}`;
      await direct.query(`create role ${role} login password 'full' connection limit 0`);
      try {
        const error = await rejectionOf(neon(withLogin(url, role, 'full'))`select 1`);
        expect(error.message).toMatch(/^Server error \(HTTP status 500\): .*"code":"53300"/);
        expect(isRetryableDatabaseError(error)).toBe(true);
      } finally {
        await direct.query(`drop role ${role}`);
      }
    });

    it.each([
      ['compute-unreachable', "Couldn't connect to compute node"],
      ['control-plane', 'Control plane request failed'],
    ] as const)('answers a simulated %s as a 500 with no code', async (kind, message) => {
      proxy.simulateConnectFailure({ kind });
      try {
        const error = await rejectionOf(neon(url)`select 1`);
        expect(error.message).toContain(message);
        expect(isRetryableDatabaseError(error)).toBe(true);
      } finally {
        proxy.simulateConnectFailure(undefined);
      }
    });

    it('keeps an unknown database a 400 with 3D000', async () => {
      const other = new URL(url);
      other.pathname = '/no_such_database';
      const error = await rejectionOf(neon(other.toString())`select 1`);
      expect(error.code).toBe('3D000');
      expect(isRetryableDatabaseError(error)).toBe(false);
    });
  });

  describe('authentication', () => {
    it.each([
      ['a wrong password', (u: string) => withLogin(u, new URL(u).username, 'wrong')],
      ['an unknown role', (u: string) => withLogin(u, 'no_such_role', 'whatever')],
    ])('answers %s with Neon’s own 400 and an empty code', async (_, login) => {
      const target = login(url);
      const error = await rejectionOf(neon(target)`select 1`);
      expect(error.message).toBe(
        `password authentication failed for user '${new URL(target).username}'`,
      );
      expect(error).toMatchObject({ code: '', severity: '' });
      expect(isRetryableDatabaseError(error)).toBe(false);
    });

    it('refuses a connection string without a password', async () => {
      const parsed = new URL(url);
      parsed.password = '';
      const error = await rejectionOf(neon(parsed.toString())`select 1`);
      expect(error.message).toBe('missing authentication credentials');
      expect(error.code).toBe('');
    });
  });

  describe('lost sessions and cancelled requests', () => {
    it('commits nothing when the client aborts inside transaction(), and cancels the query', async () => {
      const sql = neon(url);
      const abort = new AbortController();
      const running = rejectionOf(
        sql.transaction([sql.query(`insert into ${table} values (1)`), sql`select pg_sleep(30)`], {
          fetchOptions: { signal: abort.signal },
        }),
      );
      await waitFor('the batch to reach pg_sleep', async () => {
        const { rows } = await direct.query(
          `select 1 from pg_stat_activity where query = 'select pg_sleep(30)' and state = 'active'`,
        );
        return rows.length > 0;
      });
      abort.abort();
      // The driver wraps the fetch's AbortError as a failed connection.
      expect((await running).message).toMatch(/^Error connecting to database: .*abort/i);
      await waitFor(
        'the cancelled query to stop',
        async () => {
          const { rows } = await direct.query(
            `select 1 from pg_stat_activity where query = 'select pg_sleep(30)' and state = 'active'`,
          );
          return rows.length === 0;
        },
        5_000,
      );
      expect(await ids()).toEqual([]);
    });

    it('reports a session lost without a message as 400 "connection closed" with no code', async () => {
      proxy.dropNextHttpSession();
      const error = await rejectionOf(neon(url)`select 1`);
      expect(error).toMatchObject({ message: 'connection closed', code: '', severity: '' });
      expect(isRetryableDatabaseError(error)).toBe(true);
      expect(await neon(url)`select 2 as next`).toEqual([{ next: 2 }]);
    });

    it('reports a backend ended by pg_terminate_backend with its 57P01', async () => {
      const running = rejectionOf(neon(url)`select pg_sleep(30) as terminated`);
      await waitFor('the query to start', async () => {
        const { rowCount } = await direct.query(
          `select pg_terminate_backend(pid) from pg_stat_activity
           where query like '%pg_sleep(30) as terminated%' and pid <> pg_backend_pid()`,
        );
        return (rowCount ?? 0) > 0;
      });
      const error = await running;
      expect(error.code).toBe('57P01');
      expect(isRetryableDatabaseError(error)).toBe(true);
      expect(await neon(url)`select 3 as next`).toEqual([{ next: 3 }]);
    });
  });

  describe('requests Neon refuses', () => {
    it('refuses params: null with 400', async () => {
      const reply = await postSql(JSON.stringify({ query: 'select 1', params: null }));
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ code: '', severity: '' });
    });

    it('answers an unknown path or method with 400', async () => {
      const unknownPath = await fetch(`${proxy.url}/nope`, { method: 'POST', body: '{}' });
      expect(unknownPath.status).toBe(400);
      const wrongMethod = await fetch(`${proxy.url}/sql`);
      expect(wrongMethod.status).toBe(400);
      expect(await wrongMethod.json()).toMatchObject({ message: 'query is not supported' });
    });

    it('refuses an invalid isolation level even on a single query', async () => {
      const reply = await postSql(JSON.stringify({ query: 'select 1' }), {
        'neon-batch-isolation-level': 'Chaotic',
      });
      expect(reply).toEqual({
        status: 400,
        body: expect.objectContaining({ message: 'invalid isolation level', severity: '' }),
      });
    });

    it('refuses a request of 10 MiB + 1 byte with 413', async () => {
      const prefix = '{"query":"select 1","params":["';
      const suffix = '"]}';
      const body = prefix + 'x'.repeat(TEN_MIB + 1 - prefix.length - suffix.length) + suffix;
      expect(Buffer.byteLength(body)).toBe(TEN_MIB + 1);
      const reply = await postSql(body);
      expect(reply.status).toBe(413);
    });

    it('fails a batch whose results pass 10 MiB with 507 and commits nothing', async () => {
      const sql = neon(url);
      const half = Math.ceil(TEN_MIB / 2) + 1;
      const error = await rejectionOf(
        sql.transaction([
          sql.query(`insert into ${table} values (2)`),
          sql.query('select repeat($1, $2::int) as big', ['x', half]),
          sql.query('select repeat($1, $2::int) as big', ['y', half]),
        ]),
      );
      expect(error.message).toMatch(/^Server error \(HTTP status 507\)/);
      expect(isRetryableDatabaseError(error)).toBe(false);
      expect(await ids()).toEqual([]);
    });
  });
});
