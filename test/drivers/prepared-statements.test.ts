import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import {
  MAX_PREPARED_TEXTS,
  PREPARE_AFTER_RUNS,
  preparedNames,
} from '../../src/drivers/prepared-names.js';
import { useTestDatabase } from '../support/database.js';

const database = useTestDatabase();

/** What the server holds prepared on this one connection. */
async function preparedOnServer(client: pg.PoolClient): Promise<string[]> {
  const { rows } = await client.query<{ statement: string }>(
    'SELECT statement FROM pg_prepared_statements ORDER BY statement',
  );
  return rows.map((row) => row.statement);
}

describe('prepared statements in the pg executor', () => {
  it('prepares a statement on the server once it repeats, and runs it by name after', async () => {
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    try {
      const client = await pool.connect();
      try {
        const db = pgExecutor(client);
        const text = 'SELECT $1::int + 1 AS n';
        expect((await db.query(text, [1])).rows[0]!.n).toBe(2);
        expect(await preparedOnServer(client)).not.toContain(text);
        for (let i = 0; i < 3; i++) {
          expect((await db.query(text, [i])).rows[0]!.n).toBe(i + 1);
        }
        expect(await preparedOnServer(client)).toContain(text);
      } finally {
        client.release();
      }
    } finally {
      await pool.end();
    }
  });

  it('never prepares with prepare: false', async () => {
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    try {
      const client = await pool.connect();
      try {
        const db = pgExecutor(client, { prepare: false });
        for (let i = 0; i < 3; i++) await db.query('SELECT 42 AS answer');
        expect(await preparedOnServer(client)).not.toContain('SELECT 42 AS answer');
      } finally {
        client.release();
      }
    } finally {
      await pool.end();
    }
  });
});

describe('prepared statement names', () => {
  it('names a text only from its second run, and the same text always the same name', () => {
    const names = preparedNames();
    expect(PREPARE_AFTER_RUNS).toBe(2);
    expect(names.nameFor('SELECT 1')).toBeUndefined();
    const name = names.nameFor('SELECT 1');
    expect(name).toMatch(/^outbox_[0-9a-f]{16}$/);
    expect(names.nameFor('SELECT 1')).toBe(name);
    // Stable across executors and processes: derived from the text alone.
    const other = preparedNames();
    other.nameFor('SELECT 1');
    expect(other.nameFor('SELECT 1')).toBe(name);
    expect(names.nameFor('SELECT 2')).toBeUndefined();
    expect(names.nameFor('SELECT 2')).not.toBe(name);
  });

  it('stops naming new texts past the cap, so endless distinct texts prepare nothing more', () => {
    const names = preparedNames();
    const named = new Set<string>();
    for (let i = 0; i < MAX_PREPARED_TEXTS + 20; i++) {
      const text = `SELECT ${i}`;
      names.nameFor(text);
      const name = names.nameFor(text);
      if (name) named.add(name);
    }
    expect(named.size).toBe(MAX_PREPARED_TEXTS);
    expect(names.nameFor('SELECT 0')).toBeDefined();
  });
});
