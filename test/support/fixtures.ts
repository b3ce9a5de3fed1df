/** Small factories for rows and statements the tests write. */
import type pg from 'pg';
import type { Statement } from '../../src/core/ports.js';

/** The domain write a test pairs with its messages. */
export function insertUser(email: string): Omit<Statement, 'name'> {
  return { text: 'INSERT INTO users (email) VALUES ($1)', params: [email] };
}

export async function countMessages(pool: pg.Pool, schema = 'outbox'): Promise<number> {
  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${schema}.messages`);
  return rows[0].n;
}

/** A valid email payload: what the built-in `email` kind's validator accepts. */
export function welcomeEmail(to: string) {
  return { to: [to], subject: 'Welcome', text: 'Hello!' };
}
