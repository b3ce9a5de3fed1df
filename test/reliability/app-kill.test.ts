/**
 * The seed's check: the app process is SIGKILLed right after its transaction commits (before
 * any kick or drain could run); when the app starts again, its drain schedule sends the pending
 * email. Repeated a few times, to SES through the local emulator (aws-ses-v2-local).
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalSes, startLocalSes } from '../../src/dev/local-ses.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { useTestDatabase } from '../support/database.js';
import { waitFor } from '../support/wait-for.js';
import { startScript } from './support/child-process.js';
import { recordScenario } from './support/scenario-results.js';

const APP = fileURLToPath(new URL('./fixtures/app-process.ts', import.meta.url));
const RUNS = 3;
const database = useTestDatabase();
let ses: LocalSes;

beforeAll(async () => {
  ses = await startLocalSes();
  await database.pool.query('CREATE TABLE public.orders (id bigserial PRIMARY KEY, note text)');
  await createOutbox({ schema: 'seed' }).migrate(pgExecutor(database.pool));
});
afterAll(async () => {
  await ses?.close();
});

/** How many emails the emulator holds with this subject. */
async function emailsWithSubject(subject: string): Promise<number> {
  const store = (await (await fetch(`${ses.url}/store`)).json()) as {
    emails: { subject: string }[];
  };
  return store.emails.filter((email) => email.subject === subject).length;
}

describe('the app killed right after its transaction commits', () => {
  it('sends the pending email when the app starts again, once', async () => {
    const env = { DATABASE_URL: database.url, SCHEMA: 'seed', SES_URL: ses.url };
    let lost = 0;
    let duplicated = 0;
    for (let run = 0; run < RUNS; run++) {
      const key = randomUUID();
      const writer = startScript(APP, { ...env, APP_MODE: 'write', ORDER_KEY: key });
      writer.onLine((line) => {
        if (line === 'committed') writer.kill();
      });
      const exit = await writer.exited;
      expect(exit.signal, writer.stderr()).toBe('SIGKILL');
      const { rows } = await database.pool.query(
        'SELECT state FROM seed.all_messages WHERE key = $1',
        [key],
      );
      expect(rows).toEqual([{ state: 'pending' }]);

      const restarted = startScript(APP, { ...env, APP_MODE: 'serve' });
      try {
        await waitFor(
          'the email at SES',
          async () => (await emailsWithSubject(`order ${key}`)) > 0,
          30_000,
        );
        await waitFor('the row delivered', async () => {
          const result = await database.pool.query(
            'SELECT state FROM seed.all_messages WHERE key = $1',
            [key],
          );
          return result.rows[0]?.state === 'delivered';
        });
      } catch (error) {
        lost += 1;
        throw error;
      } finally {
        restarted.kill();
        await restarted.exited;
      }
      duplicated += (await emailsWithSubject(`order ${key}`)) - 1;
    }
    expect(duplicated).toBe(0);
    recordScenario('app-kill', {
      scenario:
        'seed check: app SIGKILLed right after COMMIT, restarted (Node drain schedule, SES emulator)',
      runs: RUNS,
      messages: RUNS,
      faults: RUNS,
      injected: 'SIGKILL of the app after its transaction committed',
      lost,
      duplicated,
      rolledBackSent: 0,
      duplicatesAllowed: '',
    });
  });
});
