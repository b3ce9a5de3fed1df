/**
 * Issue 27's acceptance for attempt history: a real webhook receiver on 127.0.0.1 fails twice
 * and then answers 200, through real drains over a real database; the message page, the admin
 * API and `outbox show` each show the three attempts with their status codes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { MessageRecord } from '../../src/core/outbox-store.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { runOutboxInProcess } from '../cli/outbox-cli.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock } from '../support/drain-fixtures.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';
import { loopbackWebhookSender } from '../support/webhook-receiver.js';
import { ADMIN_TOKEN, mountAdmin, signIn } from './admin-harness.js';

const database = useTestDatabase();
let receiver: LoopbackServer;
/** Answers per path, in order; the last repeats. */
const script = new Map<string, number[]>();

beforeAll(async () => {
  receiver = await startLoopbackServer((request, response) => {
    const path = new URL(request.url, 'http://x').pathname;
    const answers = script.get(path) ?? [200];
    const status = answers.length > 1 ? answers.shift()! : answers[0]!;
    response.writeHead(status).end(status < 300 ? 'ok' : `busy (${status})`);
  });
});

afterAll(async () => {
  await receiver?.close();
});

const outbox = createOutbox({ schema: 'outbox' });
const sender = () => loopbackWebhookSender(receiver.port);

/** Enqueues a webhook to `path` (with a query string that must never be recorded). */
async function enqueueTo(path: string): Promise<string> {
  const [key] = await outbox.enqueue(pgExecutor(database.pool), {
    kind: 'webhook',
    payload: { url: `${receiver.url}${path}?token=S3CR3T`, body: { path } },
  });
  return key!;
}

/** Drains until the message is delivered, moving a fake clock to each retry's due time. */
async function drainUntilDelivered(key: string, drains: number): Promise<void> {
  const store = outbox.store(pgExecutor(database.pool));
  const clock = fakeClock();
  for (let drain = 1; drain <= drains; drain++) {
    await drainOnce({ store, senders: { webhook: sender() }, clock, keys: [key] });
    const message = await store.getByKey(key);
    if (message?.state === 'delivered') return;
    clock.set(message!.dueAt);
  }
  throw new Error(`not delivered after ${drains} drains`);
}

describe('attempt history of a webhook that fails twice, then succeeds', () => {
  let key: string;
  let id: string;

  beforeAll(async () => {
    script.set('/hooks/orders', [503, 429, 200]);
    key = await enqueueTo('/hooks/orders');
    await drainUntilDelivered(key, 3);
    id = (await outbox.store(pgExecutor(database.pool)).getByKey(key))!.id;
  });

  it('the store records three attempts: 503 and 429 failed with their errors, then 200', async () => {
    const message = await outbox.store(pgExecutor(database.pool)).get(id);
    const destination = `${receiver.url}/hooks/orders`;
    expect(message?.attemptLog).toEqual([
      expect.objectContaining({
        attempt: 1,
        outcome: 'retry',
        status: 503,
        destination,
        error: expect.stringContaining(`webhook to ${destination} answered HTTP 503: busy (503)`),
      }),
      expect.objectContaining({ attempt: 2, outcome: 'retry', status: 429, destination }),
      expect.objectContaining({ attempt: 3, outcome: 'delivered', status: 200, error: null }),
    ]);
    for (const attempt of message!.attemptLog!) {
      expect(attempt.at).toBeInstanceOf(Date);
      expect(attempt.durationMs).toBeGreaterThanOrEqual(0);
    }
    expect(JSON.stringify(message?.attemptLog)).not.toContain('S3CR3T');
  });

  it('GET /messages/:id and /messages/by-key/:key show the three attempts with their statuses', async () => {
    const app = mountAdmin(database);
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
    for (const path of [`/admin/messages/${id}`, `/admin/messages/by-key/${key}`]) {
      const response = await app.request(path, { headers });
      expect(response.status).toBe(200);
      const { message } = (await response.json()) as {
        message: MessageRecord & { attemptLog: { status: number; outcome: string }[] };
      };
      expect(message.attemptLog.map((attempt) => [attempt.outcome, attempt.status])).toEqual([
        ['retry', 503],
        ['retry', 429],
        ['delivered', 200],
      ]);
    }
  });

  it('the message page shows an attempts table with each status code', async () => {
    const app = mountAdmin(database);
    const { cookie } = await signIn(app);
    const response = await app.request(`/admin/dashboard/messages/${id}`, { headers: { cookie } });
    expect(response.status).toBe(200);
    const page = await response.text();
    const section = page.slice(page.indexOf('<h2>Attempts</h2>'));
    const rows = [...section.matchAll(/<tr class="attempt attempt-(\w+)">([\s\S]*?)<\/tr>/g)];
    expect(rows.map(([, outcome, cells]) => [outcome, /HTTP (\d{3})/.exec(cells!)?.[1]])).toEqual([
      ['retry', '503'],
      ['retry', '429'],
      ['delivered', '200'],
    ]);
    expect(section).toContain(`${receiver.url}/hooks/orders`);
  });

  it('outbox show prints the three attempts with their statuses, by id and by key', async () => {
    const env = { DATABASE_URL: database.url };
    for (const target of [id, key]) {
      const result = await runOutboxInProcess(['show', target], env);
      expect(result).toMatchObject({ code: 0, stderr: '' });
      const table = result.stdout.slice(result.stdout.indexOf('ATTEMPT'));
      const lines = table.trim().split('\n').slice(1);
      expect(lines.map((line) => line.split(/\s{2,}/).slice(3, 5))).toEqual([
        ['retry', '503'],
        ['retry', '429'],
        ['delivered', '200'],
      ]);
    }
    const json = await runOutboxInProcess(['show', key, '--json'], env);
    const { message } = JSON.parse(json.stdout) as { message: MessageRecord };
    expect(message.attemptLog?.map((attempt) => attempt.status)).toEqual([503, 429, 200]);
  });

  it('outbox show refuses what is neither an id nor a key, and says so for a missing message', async () => {
    const env = { DATABASE_URL: database.url };
    expect(await runOutboxInProcess(['show', 'nope'], env)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('neither a message id'),
    });
    const missing = await runOutboxInProcess(['show', '999999999'], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no message with id 999999999');
  });
});
