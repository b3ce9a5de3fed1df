/**
 * Provider faults: an SES endpoint that is down, slow, throttling or answering garbage, and
 * webhook receivers that reset connections, stall before their headers or stall mid-body. The
 * real SES SDK and the real webhook sender make every request to loopback stand-ins. Drains run
 * with a clock that jumps ahead between runs, so retries come due. Nothing is lost, every retry
 * waits at least its backoff, and no send outlives its timeout.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { Sender } from '../../src/core/sender.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { SES_THROTTLED_RETRY_AFTER_MS } from '../../src/senders/ses/ses-errors.js';
import { sesSender } from '../../src/senders/ses/ses-sender.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock, seededRandom } from '../support/drain-fixtures.js';
import { loopbackWebhookSender } from '../support/webhook-receiver.js';
import { account, type DeliveryLedger, startDeliveryLedger } from './support/delivery-ledger.js';
import { recordScenario } from './support/scenario-results.js';

const database = useTestDatabase();
const SEND_TIMEOUT_MS = 400;
/** Real time a send may take past its timeout: bookkeeping, and event-loop lag on a busy CI box. */
const TIMEOUT_SLACK_MS = 1_000;
const random = seededRandom(99);
let healthy = false;
let faults = 0;

const SES_FAULTS = ['down', 'slow', 'throttle', 'garbage'] as const;
const WEBHOOK_FAULTS = ['reset', 'stall-headers', 'stall-body'] as const;

/** Stalled responses, ended at teardown. */
const stalled: ServerResponse[] = [];

/** An SES stand-in speaking the query protocol: accepts, or plays one fault at random. */
async function startSesStandIn() {
  const accepted: string[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const fault = healthy || random() < 0.3 ? undefined : SES_FAULTS[Math.floor(random() * 4)]!;
      if (fault) faults += 1;
      if (fault === 'down') return response.socket?.destroy();
      if (fault === 'garbage') {
        // An HTML error page from something in front of SES: not an SES answer at all.
        return response
          .writeHead(502, { 'content-type': 'text/html' })
          .end('<html><body><h1>502 Bad Gateway</h1><<garbage</body></html>');
      }
      if (fault === 'throttle') {
        return response
          .writeHead(400, { 'content-type': 'text/xml' })
          .end(
            '<ErrorResponse xmlns="http://ses.amazonaws.com/doc/2010-12-01/"><Error><Type>Sender</Type><Code>Throttling</Code><Message>Maximum sending rate exceeded.</Message></Error><RequestId>r</RequestId></ErrorResponse>',
          );
      }
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const raw = Buffer.from(form.get('RawMessage.Data') ?? '', 'base64').toString('utf8');
      const key = /X-Outbox-Message-Key: *(\S+)/i.exec(raw)?.[1] ?? 'unknown';
      const accept = () => {
        // A client that gave up (its send timed out) never learns of this: SES did not take it.
        if (response.destroyed || request.socket.destroyed) return;
        accepted.push(key);
        response
          .writeHead(200, { 'content-type': 'text/xml' })
          .end(
            `<SendRawEmailResponse xmlns="http://ses.amazonaws.com/doc/2010-12-01/"><SendRawEmailResult><MessageId>${key}</MessageId></SendRawEmailResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></SendRawEmailResponse>`,
          );
      };
      if (fault === 'slow') setTimeout(accept, SEND_TIMEOUT_MS * 2);
      else accept();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    accepted,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let ses: Awaited<ReturnType<typeof startSesStandIn>>;
let ledger: DeliveryLedger;

beforeAll(async () => {
  ses = await startSesStandIn();
  ledger = await startDeliveryLedger();
  ledger.behave((_request, response) => {
    if (healthy || random() < 0.3) return false;
    faults += 1;
    const fault = WEBHOOK_FAULTS[Math.floor(random() * 3)]!;
    if (fault === 'reset') response.socket?.destroy();
    else if (fault === 'stall-headers') stalled.push(response);
    else {
      response.writeHead(503, { 'content-type': 'text/plain' });
      response.write('overloaded, and the rest of this body never com');
      stalled.push(response);
    }
    return true;
  });
});
afterAll(async () => {
  for (const response of stalled) response.destroy();
  await Promise.all([ses?.close(), ledger?.close()]);
});

describe('providers failing in every way they do', () => {
  it('lose nothing: every send ends by its timeout, every retry waits its backoff, all delivered once healthy', async () => {
    const outbox = createOutbox({ schema: 'provider_faults' });
    const db = pgExecutor(database.pool);
    await outbox.migrate(db);
    const committed = await outbox.enqueue(db, [
      ...Array.from({ length: 40 }, (_, index) => ({
        kind: 'email',
        payload: { to: [`user${index}@example.com`], subject: `hello ${index}`, text: 'hi' },
      })),
      ...Array.from({ length: 40 }, (_, index) => ({
        kind: 'webhook',
        payload: { url: `${ledger.url}/hook`, body: { index } },
      })),
    ]);
    const clock = fakeClock();
    /** Per key: the fake time of each attempt, and the real duration of each send. */
    const attempts = new Map<string, number[]>();
    const durations: number[] = [];
    const timedOut = new Set<string>();
    const timed =
      (sender: Sender): Sender =>
      async (message, signal, context) => {
        const list = attempts.get(message.key) ?? [];
        list.push(clock.now().getTime());
        attempts.set(message.key, list);
        const started = performance.now();
        try {
          await sender(message, signal, context);
        } finally {
          durations.push(performance.now() - started);
          if (signal.aborted) timedOut.add(message.key);
        }
      };
    const senders = {
      email: timed(
        sesSender({
          region: 'eu-west-1',
          credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
          endpoint: ses.url,
          defaultFrom: 'Shop <shop@example.com>',
        }),
      ),
      webhook: timed(loopbackWebhookSender(ledger.port)),
    };
    const store = outbox.store(db);
    const options = {
      store,
      senders,
      clock,
      sendTimeoutMs: SEND_TIMEOUT_MS,
      roundTripReserveMs: 200,
      leaseMs: 5_000,
      concurrency: 20,
    };

    // Backoff observed: what failed is not tried again at once, and throttling waits its minute.
    const first = await drainOnce(options);
    expect(first.retried).toBeGreaterThan(0);
    const triedOnce = new Map([...attempts].map(([key, times]) => [key, times.length]));
    const again = await drainOnce(options);
    expect(again.claimed).toBe(0);
    expect(new Map([...attempts].map(([key, times]) => [key, times.length]))).toEqual(triedOnce);
    const throttled = await database.pool.query<{ wait_ms: number }>(
      `SELECT EXTRACT(EPOCH FROM due_at - $1::timestamptz) * 1000 AS wait_ms
       FROM provider_faults.messages WHERE state = 'pending' AND last_error ILIKE '%throttl%'`,
      [clock.now()],
    );
    for (const row of throttled.rows) {
      expect(Number(row.wait_ms)).toBeGreaterThanOrEqual(SES_THROTTLED_RETRY_AFTER_MS - 1_000);
    }
    let runs = 2;
    for (let round = 0; round < 40; round++) {
      // Past any backoff a retry can have by now (throttling's minute included), and healthy
      // after four more rounds of faults (six attempts at most, under the ten allowed).
      if (round === 4) healthy = true;
      clock.advance(SES_THROTTLED_RETRY_AFTER_MS + 60_000);
      runs += 1;
      await drainOnce(options);
      const stats = await store.stats(clock.now());
      if (healthy && stats.pending === 0 && stats.claimed === 0) break;
    }
    const dead = await database.pool.query(
      `SELECT attempts, last_error FROM provider_faults.messages WHERE state = 'dead'`,
    );
    expect(dead.rows).toEqual([]);
    const stats = await store.stats(clock.now());
    expect(stats).toMatchObject({ pending: 0, claimed: 0, dead: 0 });

    const deliveries = [
      ...ses.accepted.map((key) => ({ key, by: 'ses', at: 0 })),
      ...ledger.deliveries,
    ];
    const result = account(deliveries, committed);
    expect(result.lost).toEqual([]);
    // The one duplicate a provider fault can cause: the provider answered after the send's
    // timeout (SES slow on purpose; any receiver on a starved machine), so it took a message
    // the drain recorded as failed.
    expect([...result.duplicated.keys()].filter((key) => !timedOut.has(key))).toEqual([]);
    expect(faults).toBeGreaterThan(20);
    // Every send ended by its timeout, however the provider stalled.
    expect(Math.max(...durations)).toBeLessThan(SEND_TIMEOUT_MS + TIMEOUT_SLACK_MS);
    expect([...attempts.values()].some((times) => times.length > 2)).toBe(true);

    recordScenario('provider-faults', {
      scenario: 'provider faults: SES stand-in and webhook receivers, 40 emails + 40 webhooks',
      runs,
      messages: committed.length,
      faults,
      injected:
        'SES down, slow (2x timeout), throttling, an HTML 502 page; webhook reset, stalled headers, stalled body',
      lost: result.lost.length,
      duplicated: result.extraDeliveries,
      rolledBackSent: result.rolledBackSent.length,
      duplicatesAllowed:
        result.extraDeliveries === 0
          ? ''
          : 'the provider answered after the send timed out (it took the message, the drain saw a timeout); resent under the same key',
    });
  });
});
