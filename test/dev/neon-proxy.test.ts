/**
 * The local Neon proxy (src/dev/neon-proxy.ts), driven by the real @neondatabase/serverless
 * driver against real PostgreSQL: WebSocket Pool and Client, HTTP `neon()` queries and
 * batches, Postgres errors, and the allow-list that keeps tunnels on this machine.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import {
  Client as NeonClient,
  type NeonDbError,
  Pool as NeonPool,
  neon,
  neonConfig,
} from '@neondatabase/serverless';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { applyNeonLocalConfig, type NeonProxy, startNeonProxy } from '../../src/dev/neon-proxy.js';
import { useTestDatabase } from '../support/database.js';

const database = useTestDatabase();

/** The same URL with another host (and no port), as a Neon connection string would have. */
function withHost(url: string, host: string): string {
  const parsed = new URL(url);
  parsed.hostname = host;
  parsed.port = '';
  return parsed.toString();
}

async function rejectionOf(promise: Promise<unknown>): Promise<NeonDbError> {
  try {
    await promise;
  } catch (error) {
    return error as NeonDbError;
  }
  throw new Error('expected the query to fail, but it succeeded');
}

/** More than loopback's socket buffers hold, so the tunnel's write to Postgres backs up. */
const PIPELINED_BYTES = 16 * 1024 * 1024;

/** Well under the 30 s ws gives a close handshake before it drops the socket. */
const CLOSE_BOUND_MS = 10_000;

/** What the test reaches of the Neon driver's socket. */
interface NeonSocket {
  write(data: Buffer): void;
  ws: { bufferedAmount: number };
}

/**
 * Waits until the client has handed every byte to its socket: by then the tunnel has read most
 * of the pipelined query (the buffers hold a few MiB of it), and it needs a moment for the rest.
 */
async function waitForBlockedWrite(webSocket: { bufferedAmount: number }): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (webSocket.bufferedAmount > 0) {
    if (Date.now() > deadline) throw new Error('the client never sent the pipelined query');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await new Promise((resolve) => setTimeout(resolve, 200));
}

describe('local Neon proxy', () => {
  let url: string;
  let proxy: NeonProxy;
  let direct: pg.Client;
  let schema: string;
  let items: string;

  beforeAll(async () => {
    url = database.url;
    const parsed = new URL(url);
    proxy = await startNeonProxy({
      postgres: { host: parsed.hostname, port: Number(parsed.port || 5432) },
    });
    applyNeonLocalConfig(neonConfig, proxy);

    direct = new pg.Client({ connectionString: url });
    await direct.connect();
    schema = `neon_proxy_${randomBytes(4).toString('hex')}`;
    items = `${schema}.items`;
    await direct.query(`create schema ${schema}`);
    await direct.query(
      `create table ${items} (id int primary key, label text not null constraint items_label_key unique)`,
    );
  });

  afterAll(async () => {
    await direct?.query(`drop schema if exists ${schema} cascade`);
    await direct?.end();
    await proxy?.close();
  });

  async function itemIds(): Promise<number[]> {
    const { rows } = await direct.query<{ id: number }>(`select id from ${items} order by id`);
    return rows.map((row) => row.id);
  }

  describe('over WebSocket', () => {
    let pool: NeonPool;

    beforeAll(() => {
      pool = new NeonPool({ connectionString: url });
    });

    afterAll(async () => {
      await pool?.end();
      await direct.query(`truncate ${items}`);
    });

    it('a Pool answers a plain query through the tunnel', async () => {
      const { rows } = await pool.query('select 1 as one');
      expect(rows).toEqual([{ one: 1 }]);
    });

    it('a Pool binds query parameters', async () => {
      const { rows } = await pool.query('select $1::int + $2::int as sum, $3::text as label', [
        2,
        40,
        'forty-two',
      ]);
      expect(rows).toEqual([{ sum: 42, label: 'forty-two' }]);
    });

    it('an interactive transaction that rolls back leaves nothing behind', async () => {
      const client = await pool.connect();
      try {
        await client.query('begin');
        await client.query(`insert into ${items} (id, label) values ($1, $2)`, [1, 'rolled back']);
        const inside = await client.query(`select count(*)::int as n from ${items}`);
        expect(inside.rows).toEqual([{ n: 1 }]);
        await client.query('rollback');
      } finally {
        client.release();
      }
      expect(await itemIds()).toEqual([]);
    });

    it('ends a client promptly when its backend dies while the tunnel waits for Postgres to read', async () => {
      const client = new NeonClient(url);
      applyNeonLocalConfig(client.neonConfig, proxy);
      client.on('error', () => {});
      await client.connect();
      const ended = new Promise<number>((resolve) => client.on('end', () => resolve(Date.now())));
      const pid = (await client.query('select pg_backend_pid() as pid')).rows[0].pid;
      const sleeping = client.query('select pg_sleep(30)').catch(() => {});
      // A query pipelined behind the sleep, too big for the socket buffers: Postgres reads none
      // of it while it sleeps, so the tunnel stops reading the WebSocket until Postgres drains.
      const text = `select 1 -- ${'x'.repeat(PIPELINED_BYTES)}`;
      const query = Buffer.alloc(5 + Buffer.byteLength(text) + 1);
      query.write('Q', 0);
      query.writeInt32BE(query.length - 1, 1);
      query.write(text, 5);
      // The driver's socket (a WebSocket inside): what pg writes its own messages to.
      const { stream } = (client as unknown as { connection: { stream: NeonSocket } }).connection;
      stream.write(query);
      await waitForBlockedWrite(stream.ws);
      const killedAt = Date.now();
      await direct.query('select pg_terminate_backend($1)', [pid]);
      await sleeping;
      // ws waits 30 s for the close frame a paused WebSocket never reads, then drops the socket.
      expect((await ended) - killedAt).toBeLessThan(CLOSE_BOUND_MS);
    });

    it('a Client can be pointed at the proxy on its own neonConfig', async () => {
      const client = new NeonClient(url);
      applyNeonLocalConfig(client.neonConfig, proxy);
      await client.connect();
      try {
        const { rows } = await client.query('select current_database() as name');
        expect(rows).toEqual([{ name: new URL(url).pathname.slice(1) }]);
      } finally {
        await client.end();
      }
    });
  });

  describe('over HTTP', () => {
    afterAll(async () => {
      await direct.query(`truncate ${items}`);
    });

    it('returns every value with the JavaScript type pg gives it', async () => {
      const text = `select $1::int4 as int4, $2::int8 as int8, $3::timestamptz as at,
        $4::jsonb as doc, $5::uuid as id, $6::text[] as tags, $7::bool as flag,
        $8::text as nothing, $9::numeric as amount, $10::float8 as ratio`;
      const params = [
        42,
        '9007199254740993',
        new Date('2024-05-06T07:08:09.123Z'),
        { a: 1, nested: { b: [true, null] } },
        randomUUID(),
        ['plain', 'with space', 'comma,inside', 'quote"inside', 'back\\slash', 'NULL', null, ''],
        true,
        null,
        '12345678901234567890.5',
        0.25,
      ];

      const [viaNeon] = await neon(url).query(text, params);
      const viaPg = await direct.query(text, params);

      expect(viaNeon).toEqual(viaPg.rows[0]);
      expect(viaNeon).toMatchObject({
        int4: 42,
        int8: '9007199254740993',
        at: new Date('2024-05-06T07:08:09.123Z'),
        doc: { a: 1, nested: { b: [true, null] } },
        id: params[4],
        tags: [
          'plain',
          'with space',
          'comma,inside',
          'quote"inside',
          'back\\slash',
          'NULL',
          null,
          '',
        ],
        flag: true,
        nothing: null,
        amount: '12345678901234567890.5',
        ratio: 0.25,
      });
      expect(viaNeon?.at).toBeInstanceOf(Date);
    });

    it('keeps duplicate column names in array mode', async () => {
      const rows = await neon(url, { arrayMode: true })`select 1 as a, 'two' as a`;
      expect(rows).toEqual([[1, 'two']]);
    });

    it('returns rows, rowCount, command and fields with fullResults', async () => {
      const sql = neon(url);
      const inserted = await sql.query(
        `insert into ${items} (id, label) values (10, 'ten'), (11, 'eleven')`,
        [],
        { fullResults: true },
      );
      expect(inserted).toMatchObject({ command: 'INSERT', rowCount: 2, rows: [] });

      const selected = await sql.query(
        `select id, label from ${items} where id >= $1 order by id`,
        [10],
        { fullResults: true },
      );
      expect(selected.rows).toEqual([
        { id: 10, label: 'ten' },
        { id: 11, label: 'eleven' },
      ]);
      expect(selected.rowCount).toBe(2);
      expect(selected.command).toBe('SELECT');
      expect(selected.fields.map((field) => [field.name, field.dataTypeID])).toEqual([
        ['id', 23],
        ['label', 25],
      ]);
    });

    it('commits every statement of a transaction', async () => {
      const sql = neon(url);
      const [first, second] = await sql.transaction([
        sql.query(`insert into ${items} (id, label) values ($1, $2) returning id`, [20, 'twenty']),
        sql.query(`insert into ${items} (id, label) values ($1, $2) returning id`, [
          21,
          'twenty-one',
        ]),
      ]);
      expect(first).toEqual([{ id: 20 }]);
      expect(second).toEqual([{ id: 21 }]);
      expect(await itemIds()).toEqual(expect.arrayContaining([20, 21]));
    });

    it('rolls back the whole transaction when a later statement fails', async () => {
      const sql = neon(url);
      const error = await rejectionOf(
        sql.transaction([
          sql.query(`insert into ${items} (id, label) values ($1, $2)`, [30, 'thirty']),
          sql.query(`insert into ${items} (id, label) values ($1, $2)`, [31, 'thirty']),
        ]),
      );
      expect(error.code).toBe('23505');
      expect(await itemIds()).not.toContain(30);
    });

    it('runs a transaction with the requested isolation level and read-only mode', async () => {
      const sql = neon(url);
      const [settings] = await sql.transaction(
        [
          sql`select current_setting('transaction_isolation') as isolation,
                current_setting('transaction_read_only') as read_only`,
        ],
        { isolationLevel: 'Serializable', readOnly: true },
      );
      expect(settings).toEqual([{ isolation: 'serializable', read_only: 'on' }]);

      const error = await rejectionOf(
        sql.transaction([sql.query(`insert into ${items} (id, label) values (40, 'forty')`)], {
          readOnly: true,
        }),
      );
      expect(error.code).toBe('25006');
    });

    it('reports a unique violation with its SQLSTATE, constraint and detail', async () => {
      const sql = neon(url);
      await sql.query(`insert into ${items} (id, label) values (50, 'fifty')`);
      const error = await rejectionOf(
        sql.query(`insert into ${items} (id, label) values (51, 'fifty')`),
      );
      expect(error.name).toBe('NeonDbError');
      expect(error).toMatchObject({
        code: '23505',
        severity: 'ERROR',
        schema,
        table: 'items',
        constraint: 'items_label_key',
        detail: 'Key (label)=(fifty) already exists.',
      });
      expect(error.message).toContain('items_label_key');
    });

    it('reports a syntax error as 42601 with its position', async () => {
      const error = await rejectionOf(neon(url).query('selec 1'));
      expect(error).toMatchObject({ code: '42601', position: '1' });
    });

    it('rejects several statements in one query, as Neon does', async () => {
      const error = await rejectionOf(neon(url).query('select 1; select 2'));
      expect(error.code).toBe('42601');
      expect(error.message).toContain('cannot insert multiple commands into a prepared statement');
    });

    it('does not let a lone BEGIN leak into the next query on the same pooled session', async () => {
      const sql = neon(url);
      await sql.query('begin');
      // Were the session returned to the pool mid-transaction, this insert would run inside it
      // and stay invisible to other sessions.
      await sql.query(`insert into ${items} (id, label) values (60, 'sixty')`);
      expect(await itemIds()).toContain(60);
    });

    it('sends a Neon-style hostname to the configured Postgres', async () => {
      const sql = neon(withHost(url, 'ep-local-test.example.invalid'));
      expect(await sql`select 7 as seven`).toEqual([{ seven: 7 }]);
    });
  });

  describe('allow-list', () => {
    it('refuses a WebSocket to a non-loopback address with 403', async () => {
      const { status, body } = await new Promise<{ status: number; body: string }>(
        (resolve, reject) => {
          const socket = new WebSocket(`ws://127.0.0.1:${proxy.port}/v2?address=10.1.2.3:5432`);
          socket.on('open', () => reject(new Error('the proxy opened a tunnel to 10.1.2.3')));
          socket.on('error', reject);
          socket.on('unexpected-response', (request, response) => {
            let text = '';
            response.setEncoding('utf8');
            response.on('data', (chunk: string) => {
              text += chunk;
            });
            response.on('end', () => {
              request.destroy();
              resolve({ status: response.statusCode ?? 0, body: text });
            });
          });
        },
      );
      expect(status).toBe(403);
      expect(body).toContain('10.1.2.3:5432');
    });

    it('fails a Neon Client whose host is not allowed, without connecting', async () => {
      const client = new NeonClient(withHost(url, '10.1.2.3'));
      // The driver surfaces ws's ErrorEvent for the refused upgrade.
      await expect(client.connect()).rejects.toMatchObject({
        message: expect.stringContaining('403'),
      });
    });
  });
});
