/**
 * Webhook receivers answering anything (fast-check): any status from 200 to 599 with any bytes,
 * from nothing to a megabyte, drained through a real database beside a healthy webhook. Every
 * message ends delivered, retried or set aside as its status says, none stays claimed, and the
 * stored error is storable and readable whatever the receiver sent.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { useTestDatabase } from '../support/database.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';
import { expectStorableAndReadable } from '../support/stored-text.js';
import { loopbackWebhookSender } from '../support/webhook-receiver.js';

const database = useTestDatabase();
const MIB = 1024 * 1024;

interface Answer {
  status: number;
  body: Uint8Array;
}

/** What the receiver answers, by path; paths not here are healthy (204). */
const answers = new Map<string, Answer>();
let receiver: LoopbackServer;

beforeAll(async () => {
  receiver = await startLoopbackServer((request, response) => {
    const answer = answers.get(request.url);
    if (answer === undefined) {
      response.writeHead(204).end();
      return;
    }
    response.writeHead(answer.status);
    response.end(answer.body);
  });
});

afterAll(async () => {
  await receiver?.close();
});

/**
 * Statuses fetch acts on itself instead of handing them over (the Fetch standard): a 407 is a
 * network error outside a browser window, and a 421 is tried again on a new connection, which
 * undici then fails. The sender sees "fetch failed", which it retries.
 */
const FETCH_OWN_STATUSES = new Set([407, 421]);

/** Any bytes: short and random, or a pattern repeated up to a megabyte. */
const anyBody = fc.oneof(
  fc.uint8Array({ maxLength: 2048 }),
  fc
    .tuple(fc.uint8Array({ minLength: 1, maxLength: 4 }), fc.integer({ min: 1, max: MIB }))
    .map(([pattern, length]) =>
      Uint8Array.from({ length }, (_, i) => pattern[i % pattern.length]!),
    ),
  fc.string({ unit: 'binary', maxLength: 300 }).map((text) => new TextEncoder().encode(text)),
);

const encode = (text: string) => new TextEncoder().encode(text);

describe('webhook receivers answering anything', () => {
  it('every message ends delivered, retried or dead as its status says, never stuck claimed, with a readable error', async () => {
    const outbox = createOutbox({ schema: 'outbox' });
    const executor = pgExecutor(database.pool);
    const sender = loopbackWebhookSender(receiver.port);
    const seen = new Set<string>();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 200, max: 599 }),
        anyBody,
        fc.constantFrom(1, 2),
        async (status, body, maxAttempts) => {
          run += 1;
          const path = `/answer/${run}`;
          answers.set(path, { status, body });
          const [hostile, healthy] = await outbox.enqueue(executor, [
            { kind: 'webhook', payload: { url: `${receiver.url}${path}`, body: 1 }, maxAttempts },
            { kind: 'webhook', payload: { url: `${receiver.url}/healthy/${run}`, body: 2 } },
          ]);
          const report = await drainOnce({
            store: outbox.store(executor),
            senders: { webhook: sender },
            concurrency: 2,
            settleGroupMs: 100,
          });
          expect(report.stale).toBe(0);

          const { rows } = await database.pool.query<{
            key: string;
            state: string;
            last_error: string | null;
          }>('SELECT key, state, last_error FROM outbox.all_messages WHERE key = ANY($1)', [
            [hostile, healthy],
          ]);
          const stateOf = new Map(rows.map((r) => [r.key, r]));
          expect(stateOf.get(healthy!)?.state).toBe('delivered');
          const { state, last_error: lastError } = stateOf.get(hostile!)!;
          // Never 'claimed': its outcome was written, with the healthy one's.
          if (FETCH_OWN_STATUSES.has(status)) {
            expect(maxAttempts > 1 ? ['pending', 'dead'] : ['dead']).toContain(state);
          } else {
            const retryable = status >= 500 || [408, 425, 429].includes(status);
            const expected =
              status < 300 ? 'delivered' : retryable && maxAttempts > 1 ? 'pending' : 'dead';
            expect(state).toBe(expected);
          }
          seen.add(state);
          if (state !== 'delivered') {
            const says = FETCH_OWN_STATUSES.has(status)
              ? `HTTP ${status}|fetch failed`
              : `HTTP ${status}`;
            expect(lastError).toMatch(new RegExp(says));
            expectStorableAndReadable(lastError);
          }
        },
      ),
      {
        numRuns: 60,
        // Beside the random runs: one that must deliver, the receiver from the report, and the
        // status fetch turns into an error of its own.
        examples: [
          [200, encode('ok'), 2],
          [500, encode('err\0or'), 2],
          [407, encode('proxy'), 1],
          [421, encode('misdirected'), 2],
        ],
      },
    );
    const claimed = await database.pool.query(
      "SELECT 1 FROM outbox.messages WHERE state = 'claimed'",
    );
    expect(claimed.rowCount).toBe(0);
    // Both sides were exercised: some receivers accepted, some refused.
    expect(seen).toContain('delivered');
    expect(seen.has('pending') || seen.has('dead')).toBe(true);
  });
});
