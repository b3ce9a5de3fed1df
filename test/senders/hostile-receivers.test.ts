/**
 * Receivers and senders that answer with bytes PostgreSQL cannot store (NUL, invalid UTF-8,
 * lone surrogates) or a flood of control characters, drained through a real database beside
 * healthy webhooks in the same settle group: the hostile message is retried, then set aside with
 * a readable error, and every healthy one is delivered exactly once.
 */
import { Buffer } from 'node:buffer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock, freshOutbox, recordingSender } from '../support/drain-fixtures.js';
import { DRIVER_NAMES, useDriver } from '../support/drivers.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';
import { expectStorableAndReadable } from '../support/stored-text.js';
import { loopbackWebhookSender } from '../support/webhook-receiver.js';

const database = useTestDatabase();
const secret = generateWebhookSecret();
const MIB = 1024 * 1024;

/** 1 MiB cycling through every C0 control character and DEL, NUL included. */
const controlFlood = Uint8Array.from({ length: MIB }, (_, index) =>
  index % 33 === 32 ? 0x7f : index % 33,
);

/** What the receiver answers 500 with, by path: raw bytes, exactly as a hostile server sends. */
const HOSTILE_BODIES: Record<string, Uint8Array> = {
  '/nul': Buffer.from('err\0or', 'latin1'),
  // The UTF-8 spelling of a lone high surrogate (U+D800), which is not valid UTF-8, and 0xFF,
  // which is never valid.
  '/surrogate-bytes': Buffer.from([0x65, 0x72, 0x72, 0xed, 0xa0, 0x80, 0xff, 0x6f, 0x72]),
  // 199 characters then an emoji, so the 200-character snippet ends in the middle of its pair.
  '/split-pair': Buffer.from(`${'a'.repeat(199)}🎉 and more`, 'utf8'),
  '/terminal-escape': Buffer.from('\u001b[31mred\u001b[0m \u009b2J done', 'utf8'),
  '/control-flood': controlFlood,
};
const HEALTHY = 10;

let receiver: LoopbackServer;
/** Requests per webhook-id, answered or not. */
const received = new Map<string, number>();
/** Answers are held until this many requests arrived, so all outcomes land in one group. */
let holdUntil = 0;
let release: () => void = () => {};
let arrived = Promise.resolve();

function expectArrivals(count: number): void {
  holdUntil = count;
  arrived = new Promise<void>((resolve) => {
    release = resolve;
  });
}

beforeAll(async () => {
  let arrivals = 0;
  receiver = await startLoopbackServer(async (request, response) => {
    const id = request.headers['webhook-id']!;
    received.set(id, (received.get(id) ?? 0) + 1);
    arrivals += 1;
    if (arrivals >= holdUntil) {
      arrivals = 0;
      release();
    }
    await arrived;
    const hostile = HOSTILE_BODIES[request.url];
    if (hostile === undefined) {
      response.writeHead(204).end();
      return;
    }
    response.writeHead(500, { 'content-type': 'text/plain' });
    response.end(hostile);
  });
});

afterAll(async () => {
  await receiver?.close();
});

interface Row {
  state: string;
  attempts: number;
  due_at: Date;
  last_error: string | null;
}

async function row(schema: string, key: string): Promise<Row> {
  const { rows } = await database.pool.query<Row>(
    `SELECT state, attempts, due_at, last_error FROM ${schema}.all_messages WHERE key = $1`,
    [key],
  );
  return rows[0]!;
}

/** Rows a drain left claimed: none, once every outcome was recorded. */
async function claimedRows(schema: string): Promise<number> {
  const { rows } = await database.pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${schema}.messages WHERE state = 'claimed'`,
  );
  return Number(rows[0]!.n);
}

describe.each(DRIVER_NAMES)(
  'hostile bytes from receivers and senders, through %s',
  (driverName) => {
    const driver = useDriver(driverName, database);

    it('a webhook answered with NUL, invalid UTF-8 or 1 MiB of control characters is retried, then set aside with a readable error, and the healthy webhooks beside it are delivered once', async () => {
      const sender = loopbackWebhookSender(receiver.port, { secret });
      const { outbox, store, schema } = await freshOutbox(driver);
      const hostilePaths = Object.keys(HOSTILE_BODIES);
      const paths = [...hostilePaths, ...Array.from({ length: HEALTHY }, (_, n) => `/ok/${n}`)];
      const keys = await outbox.enqueue(
        driver.db,
        paths.map((path) => ({
          kind: 'webhook',
          payload: { url: `${receiver.url}${path}`, body: { path } },
          maxAttempts: 2,
        })),
      );
      const keyOf = new Map(paths.map((path, index) => [path, keys[index]!]));
      const drain = (clock = fakeClock()) =>
        drainOnce({
          store,
          senders: { webhook: sender },
          clock,
          concurrency: paths.length,
          settleGroupMs: 10_000,
          backoff: { baseMs: 10, capMs: 10 },
        });

      expectArrivals(paths.length);
      const first = await drain();
      // One settle statement held the hostile outcomes and the healthy ones together.
      expect(first).toMatchObject({ delivered: HEALTHY, retried: hostilePaths.length, settles: 1 });
      expect(await claimedRows(schema)).toBe(0);
      for (const path of hostilePaths) {
        const after = await row(schema, keyOf.get(path)!);
        expect(after).toMatchObject({ state: 'pending', attempts: 1 });
        expectStorableAndReadable(after.last_error);
      }

      expectArrivals(hostilePaths.length);
      const retried = await Promise.all(hostilePaths.map((path) => row(schema, keyOf.get(path)!)));
      const dueAt = Math.max(...retried.map((r) => r.due_at.getTime()));
      const second = await drain(fakeClock(new Date(dueAt + 1)));
      expect(second).toMatchObject({ dead: hostilePaths.length, delivered: 0 });
      expect(await claimedRows(schema)).toBe(0);

      const errors = new Map<string, string>();
      for (const path of hostilePaths) {
        const after = await row(schema, keyOf.get(path)!);
        expect(after).toMatchObject({ state: 'dead', attempts: 2 });
        expectStorableAndReadable(after.last_error);
        expect(after.last_error).toMatch(/^attempts exhausted \(2\/2\): .*answered HTTP 500: /);
        expect(received.get(keyOf.get(path)!)).toBe(2);
        errors.set(path, after.last_error);
      }
      expect(errors.get('/nul')).toContain('HTTP 500: err\uFFFDor');
      expect(errors.get('/surrogate-bytes')).toMatch(/HTTP 500: err\uFFFD+or/);
      expect(errors.get('/split-pair')).toMatch(/HTTP 500: a{199}…$/);
      expect(errors.get('/terminal-escape')).toContain(
        'HTTP 500: \\u001b[31mred\\u001b[0m \\u009b2J done',
      );
      // The flood is cut to the snippet, escaped so each control character can be read.
      expect(errors.get('/control-flood')).toMatch(
        /HTTP 500: \uFFFD\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\u0008 (\\u[0-9a-f]{4})+/,
      );

      for (let n = 0; n < HEALTHY; n++) {
        const key = keyOf.get(`/ok/${n}`)!;
        expect(received.get(key)).toBe(1);
        expect((await row(schema, key)).state).toBe('delivered');
      }
    });

    it("a custom sender's error with NUL, lone surrogates or 1 MiB of control characters is stored readable, beside deliveries in the same settle", async () => {
      // What the sender throws, by payload: errors with hostile messages, and a value that even
      // resists being turned into text.
      const thrown: Record<string, unknown> = {
        nul: new Error('receiver said err\0or'),
        'lone-high': new Error('half a pair: \ud83d then more'),
        'lone-low': new Error('other half: \ude00 then more'),
        pair: new Error('whole pair: 😀 kept'),
        flood: new Error('\u0001\u001b\u007f\u0085\u0000'.repeat(MIB / 5)),
        uncoercible: Object.create(null),
      };
      const sender = recordingSender((message) => {
        const which = (message.payload as { which: string }).which;
        if (which in thrown) throw thrown[which];
      });
      const names = [
        ...Object.keys(thrown),
        ...Array.from({ length: HEALTHY }, (_, n) => `ok-${n}`),
      ];
      const { outbox, store, schema } = await freshOutbox(driver);
      const keys = await outbox.enqueue(
        driver.db,
        names.map((which) => ({ kind: 'test.kind', payload: { which }, maxAttempts: 1 })),
      );
      const report = await drainOnce({
        store,
        senders: { 'test.kind': sender.send },
        concurrency: names.length,
        settleGroupMs: 10_000,
      });
      expect(report).toMatchObject({ delivered: HEALTHY, dead: 6, stale: 0, settles: 1 });
      expect(await claimedRows(schema)).toBe(0);
      const stored = new Map<string, string>();
      for (const [index, which] of names.entries()) {
        const after = await row(schema, keys[index]!);
        if (which.startsWith('ok-')) {
          expect(after.state).toBe('delivered');
          expect(sender.timesSent(keys[index]!)).toBe(1);
          continue;
        }
        expect(after.state).toBe('dead');
        expectStorableAndReadable(after.last_error);
        stored.set(which, after.last_error);
      }
      expect(stored.get('nul')).toContain('Error: receiver said err\uFFFDor');
      expect(stored.get('lone-high')).toContain('half a pair: \uFFFD then more');
      expect(stored.get('lone-low')).toContain('other half: \uFFFD then more');
      expect(stored.get('pair')).toContain('whole pair: 😀 kept');
      expect(stored.get('flood')).toMatch(
        /^attempts exhausted .*: Error: \\u0001\\u001b\\u007f\\u0085\uFFFD/,
      );
      expect(stored.get('flood')!.endsWith('…')).toBe(true);
      expect(stored.get('uncoercible')).toMatch(
        /: a thrown value that cannot be turned into text$/,
      );
    });
  },
);
