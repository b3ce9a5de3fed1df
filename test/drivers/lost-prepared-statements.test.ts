/**
 * What the pg executor does when a named statement does not survive, made to happen on demand
 * on plain PostgreSQL: `DEALLOCATE ALL` takes a statement away from under a client that
 * prepared it (what the client sees as 26000 when a pooler moves it to another server
 * connection), and a `PREPARE` of the same name ahead of the client gives 42P05 (what another
 * client's statement on a shared server connection gives). test/drivers/pgbouncer.test.ts has
 * the same against a real PgBouncer.
 */
import pg from 'pg';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/core/ports.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { preparedNames } from '../../src/drivers/prepared-names.js';
import { useTestDatabase } from '../support/database.js';

const database = useTestDatabase();
let pool: pg.Pool;

const INSERT = 'INSERT INTO public.writes (label) VALUES ($1)';

beforeAll(async () => {
  await database.pool.query('CREATE TABLE public.writes (label text NOT NULL)');
});
beforeEach(async () => {
  await database.pool.query('TRUNCATE public.writes');
  // A pool per test: what a test teaches an executor about one target stays with it.
  pool = new pg.Pool({ connectionString: database.url, max: 1 });
  // The file's database is dropped with FORCE at its end, which terminates (57P01) a
  // connection the pool may still be closing: expected. Any other idle client error is not.
  pool.on('error', (error) => {
    if ((error as { code?: string }).code !== '57P01') throw error;
  });
});
afterEach(async () => {
  await pool.end();
});

/** Collects warnings. */
function warnings(): { logger: Pick<Logger, 'warn'>; lines: string[] } {
  const lines: string[] = [];
  return { logger: { warn: (message) => lines.push(message) }, lines };
}

async function writes(label: string): Promise<number> {
  const { rows } = await database.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM public.writes WHERE label = $1',
    [label],
  );
  return rows[0]!.n;
}

/** The name the executor gives `text` once it repeats. */
function nameOf(text: string): string {
  const names = preparedNames();
  names.nameFor(text);
  return names.nameFor(text)!;
}

describe('a named statement the server connection lost (26000)', () => {
  it('runs again unnamed, once, and the pool stays unnamed with one warning', async () => {
    const client = await pool.connect();
    try {
      const { logger, lines } = warnings();
      const db = pgExecutor(client, { logger });
      await db.query(INSERT, ['first']);
      await db.query(INSERT, ['named']); // prepared now, under its name
      await client.query('DEALLOCATE ALL');
      await db.query(INSERT, ['lost']);
      await db.query(INSERT, ['after']);
      expect(await writes('lost')).toBe(1);
      expect(await writes('after')).toBe(1);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/named prepared statements do not survive.*does not exist/);
      expect(lines[0]).toContain('OUTBOX_PREPARE=off');
      // Unnamed from now on, on this executor and on another over the same connection: a text
      // that repeats is no longer prepared, and nothing fails or warns again.
      const again = pgExecutor(client, { logger });
      for (let i = 0; i < 3; i++) {
        await db.query('SELECT $1::int AS repeated', [i]);
        await again.query(INSERT, ['again']);
      }
      expect(lines).toHaveLength(1);
      const { rows } = await client.query('SELECT statement FROM pg_prepared_statements');
      expect(rows).toEqual([]);
    } finally {
      client.release();
    }
  });

  it('inside the caller’s own transaction is not run again: the caller gets the 26000', async () => {
    const client = await pool.connect();
    try {
      const { logger, lines } = warnings();
      const db = pgExecutor(client, { logger });
      await db.query(INSERT, ['first']);
      await db.query(INSERT, ['named']);
      await client.query('DEALLOCATE ALL');
      await client.query('BEGIN');
      await client.query(INSERT, ['domain write']);
      await expect(db.query(INSERT, ['in transaction'])).rejects.toMatchObject({
        code: '26000',
      });
      await client.query('ROLLBACK');
      expect(await writes('domain write')).toBe(0);
      expect(await writes('in transaction')).toBe(0);
      // The caller's retry of the whole transaction runs unnamed and commits.
      await client.query('BEGIN');
      await db.query(INSERT, ['in transaction']);
      await client.query('COMMIT');
      expect(await writes('in transaction')).toBe(1);
      expect(lines).toHaveLength(1);
    } finally {
      client.release();
    }
  });

  it('in a batch restarts the whole transaction from BEGIN, and commits each statement once', async () => {
    const { logger, lines } = warnings();
    const db = pgExecutor(pool, { logger });
    const batch = (label: string) =>
      db.batch([
        { name: 'first', text: INSERT, params: [`${label} 1`] },
        { name: 'second', text: 'SELECT count(*)::int AS n FROM public.writes', params: [] },
        { name: 'third', text: INSERT, params: [`${label} 2`] },
      ]);
    await batch('warm-up');
    const client = await pool.connect(); // max 1: the batch's own connection
    await client.query('DEALLOCATE ALL');
    client.release();
    const [, seen] = await batch('lost');
    expect(await writes('lost 1')).toBe(1);
    expect(await writes('lost 2')).toBe(1);
    // The restart's second statement saw only its own transaction's first insert.
    expect(seen!.rows).toEqual([{ n: 3 }]);
    expect(lines).toHaveLength(1);
  });
});

describe('a name another session already prepared on the server connection (42P05)', () => {
  it('runs the statement unnamed instead, once', async () => {
    const client = await pool.connect();
    try {
      const { logger, lines } = warnings();
      const db = pgExecutor(client, { logger });
      // On the server connection, ahead of the client: as another client's statement would be.
      await client.query(`PREPARE "${nameOf(INSERT)}" (text) AS ${INSERT}`);
      await db.query(INSERT, ['first']);
      await db.query(INSERT, ['taken']);
      expect(await writes('taken')).toBe(1);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('already exists');
    } finally {
      client.release();
    }
  });
});

describe('failures that are not a lost name', () => {
  it('a failing COMMIT is not repeated, even when its error names the statement', async () => {
    // A deferred trigger that fails at COMMIT with a 26000 naming the batch's statement, and
    // counts its runs in a sequence (which no rollback resets).
    const name = nameOf(INSERT);
    await database.pool.query(`
      CREATE SEQUENCE public.commit_attempts;
      CREATE FUNCTION public.fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM nextval('public.commit_attempts');
        IF NEW.label = 'fails at commit' THEN EXECUTE 'EXECUTE "${name}_gone"'; END IF;
        RETURN NULL;
      END $$;
      CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT ON public.writes
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.fail_at_commit();
    `);
    try {
      const { logger, lines } = warnings();
      const db = pgExecutor(pool, { logger });
      await db.batch([{ name: 'insert', text: INSERT, params: ['fine'] }]);
      await db.batch([{ name: 'insert', text: INSERT, params: ['named'] }]);
      const before = await attempts();
      await expect(
        db.batch([{ name: 'insert', text: INSERT, params: ['fails at commit'] }]),
      ).rejects.toMatchObject({ code: '26000' });
      expect((await attempts()) - before).toBe(1);
      expect(await writes('fails at commit')).toBe(0);
      expect(lines).toEqual([]);
    } finally {
      await database.pool.query(
        'DROP TRIGGER fail_at_commit ON public.writes; DROP FUNCTION public.fail_at_commit(); DROP SEQUENCE public.commit_attempts',
      );
    }
  });

  it('a user’s own EXECUTE of a missing statement fails as it is, and naming stays on', async () => {
    const client = await pool.connect();
    try {
      const { logger, lines } = warnings();
      const db = pgExecutor(client, { logger });
      const text = 'EXECUTE no_such_statement';
      await expect(db.query(text)).rejects.toMatchObject({ code: '26000' });
      await expect(db.query(text)).rejects.toMatchObject({ code: '26000' });
      expect(lines).toEqual([]);
      await db.query(INSERT, ['one']);
      await db.query(INSERT, ['two']);
      const { rows } = await client.query(
        'SELECT 1 FROM pg_prepared_statements WHERE statement = $1',
        [INSERT],
      );
      expect(rows).toHaveLength(1);
    } finally {
      client.release();
    }
  });
});

async function attempts(): Promise<number> {
  const { rows } = await database.pool.query<{ n: string }>(
    'SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM public.commit_attempts',
  );
  return Number(rows[0]!.n);
}
