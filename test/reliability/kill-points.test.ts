/**
 * Kill points: real drain processes over each driver, SIGKILLed at random moments (after a
 * claim, mid-send, after a send before its settle, mid-settle, right after a claim taking keys'
 * heads) while new messages keep coming.
 * Afterwards a drain with a clock past every lease finishes the work. Every committed message
 * is delivered; a message goes out twice only when the process that first sent it was killed
 * before recording it, and both times under the same key. Most messages carry one of a few
 * ordering keys, so the drains claim runs of them, and the receiver sees each key's messages
 * first arrive in enqueue order.
 *
 * Half the messages are webhooks, sent one at a time to a loopback ledger; the other half go
 * in batches through the SQS batch sender to fauxqs (an SQS-compatible server, in process),
 * each drain process to a queue of its own so each copy names its sender. fauxqs's message spy
 * lists what the queues took in the order they took it: the queue side's arrival order.
 */

import { fileURLToPath } from 'node:url';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import type { JsonValue } from '../../src/core/message.js';
import { type NeonProxy, startNeonProxy } from '../../src/dev/neon-proxy.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { SQS_MESSAGE_KEY_ATTRIBUTE, sqsSender } from '../../src/senders/sqs/index.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock, seededRandom } from '../support/drain-fixtures.js';
import { DRIVER_NAMES, type DriverName } from '../support/drivers.js';
import { loopbackWebhookSender } from '../support/webhook-receiver.js';
import { startScript } from './support/child-process.js';
import {
  account,
  type Delivery,
  type DeliveryLedger,
  startDeliveryLedger,
} from './support/delivery-ledger.js';
import { recordScenario } from './support/scenario-results.js';
import { LONG_SCENARIO_TIMEOUT_MS } from './support/timeouts.js';

const KILL_DRAIN = fileURLToPath(new URL('./fixtures/kill-drain.ts', import.meta.url));
/** 17 per driver: 68 kills in all over the four, past the "at least 50". */
const RUNS_PER_DRIVER = Number(process.env.OUTBOX_RELIABILITY_KILL_RUNS ?? 17);
const MESSAGES_PER_RUN = 8;
/**
 * Ordering keys per driver and destination: 6 of each run's 8 messages carry one, three per
 * destination, each run's three the next three keys in turn; 2 carry none. A backlog then spans
 * many keys of a message or two, and each key gets a message every fourth run. Runs killed after
 * a claim taking heads give their 6 keyed messages keys of their own instead (headsRunKey).
 */
const ORDERING_KEYS = 12;
/** The kind the drains send in batches, to SQS; the others are webhooks. */
const QUEUE_KIND = 'queue.event';
const SQS_REGION = 'us-east-1';
const SQS_CREDENTIALS = { accessKeyId: 'AKIDKILLPOINTS', secretAccessKey: 'kill-points-secret' };
const LEASE_MS = 4_000;
const KILL_POINTS = ['after-claim', 'mid-send', 'after-send', 'mid-settle', 'after-heads'] as const;
type KillPoint = (typeof KILL_POINTS)[number];
/** The line a process prints as it reaches each point. */
const MARKER: Record<KillPoint, string> = {
  'after-claim': 'claimed ',
  'mid-send': 'sending ',
  'after-send': 'sent ',
  'mid-settle': 'settling ',
  // The first claim to come back after one went out taking heads (its "way heads" line).
  'after-heads': 'claimed ',
};

/**
 * The ordering key of keyed message `n` of a run killed after a claim taking heads: a key of its
 * own, sorting before every other key of its lane. Without these, whether a drain takes heads
 * at all hangs on what earlier kills left leased, and a lane's 17 runs could end with none
 * killed after such a claim. With them it is how the claim is built (src/store/due-claim.ts):
 * a new process claims first without keyed rows, then walks from the first key, so its walk
 * takes 5 of these 6 keys, a row each, comes back full with more keys than its rows fill at a
 * share each, and the next claim takes heads.
 */
const headsRunKey = (driver: DriverName, index: number, n: number) =>
  `${driver}/a-heads/${index}/${n}`;

const database = useTestDatabase();
const secret = generateWebhookSecret();
let proxy: NeonProxy;
let ledger: DeliveryLedger;
let queues: FauxqsServer;
let sqs: SQSClient;

beforeAll(async () => {
  proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
  ledger = await startDeliveryLedger();
  // Slow enough that a kill on "sending" lands while the request is in flight.
  ledger.delayMs = 15;
  // Room for every message the scenario sends, twice over.
  queues = await startFauxqs({ port: 0, logger: false, messageSpies: { bufferSize: 50_000 } });
  sqs = new SQSClient({
    endpoint: queues.address,
    region: SQS_REGION,
    credentials: SQS_CREDENTIALS,
  });
});
afterAll(async () => {
  sqs?.destroy();
  await Promise.all([ledger?.close(), proxy?.close(), queues?.stop()]);
});

/** A new standard queue named `name`; its URL. */
async function newQueue(name: string): Promise<string> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  return QueueUrl!;
}

/** Who sent what a queue took: the drain process that owns the queue. */
const queueAgent = (queueName: string) => `sqs/${queueName}`;

/** Every message the queues took, in the order they took it, as deliveries. */
function queueDeliveries(): Delivery[] {
  return queues.spy.getAllMessages().flatMap((event) =>
    event.service === 'sqs' && event.status === 'published'
      ? [
          {
            key: String(event.messageAttributes[SQS_MESSAGE_KEY_ATTRIBUTE]?.StringValue),
            by: queueAgent(event.queueName),
            at: event.timestamp,
          },
        ]
      : [],
  );
}

interface KillRun {
  /** Who it is to the receivers: its webhooks' user agent, and its own queue. */
  agents: string[];
  point: KillPoint;
  killed: boolean;
  /** Keys this process recorded as delivered before it died. */
  settled: Set<string>;
  /**
   * How each of its due claims took keyed rows, in order ("way" lines): `heads`, `walk`,
   * `walk shares` (a walk of first shares only), `none`.
   */
  ways: string[];
}

/** One driver's lane: runs one after another, each killed at a chosen point. */
async function killLane(driver: DriverName, random: () => number) {
  const schema = `kill_${driver.replace('-', '_')}`;
  const outbox = createOutbox({ schema, kinds: { [QUEUE_KIND]: true } });
  const db = pgExecutor(database.pool);
  await outbox.migrate(db);
  const committed: string[] = [];
  /** Each keyed message's ordering key, by message key, in enqueue order. */
  const orderingKeyOf = new Map<string, string>();
  const runs: KillRun[] = [];
  for (let index = 0; index < RUNS_PER_DRIVER; index++) {
    const kinds = Array.from({ length: MESSAGES_PER_RUN }, (_, n) =>
      n % 2 === 0 ? 'webhook' : QUEUE_KIND,
    );
    const point = KILL_POINTS[index % KILL_POINTS.length]!;
    const orderingKeys = kinds.map((kind, n) => {
      if (n >= MESSAGES_PER_RUN - 2) return undefined;
      if (point === 'after-heads') return headsRunKey(driver, index, n);
      return `${driver}/${kind}/${(3 * index + Math.floor(n / 2)) % ORDERING_KEYS}`;
    });
    const keys = await outbox.enqueue(
      db,
      orderingKeys.map((orderingKey, n) => ({
        kind: kinds[n]!,
        payload: (kinds[n] === 'webhook'
          ? { url: `${ledger.url}/${driver}`, body: { index, n } }
          : { index, n }) as JsonValue,
        ...(orderingKey ? { orderingKey } : {}),
        // A claim counts an attempt, and the oldest rows are claimed first by every run, so
        // under a slow machine one message can be held by every killed run in turn. Enough
        // attempts that all of them cannot set it aside (that is the poison-message rule,
        // tested in test/store/drain.test.ts): here it must be delivered.
        maxAttempts: RUNS_PER_DRIVER + 8,
      })),
    );
    committed.push(...keys);
    keys.forEach((key, n) => {
      const orderingKey = orderingKeys[n];
      if (orderingKey) orderingKeyOf.set(key, orderingKey);
    });
    // Which occurrence of the marker, and a few ms after it: a random moment near the point.
    // After-claim kills take the first claim, before anything was sent; a later claim is a
    // prefetch made while the previous batch sends, so a kill there is a mid-send kill.
    const occurrence =
      point === 'after-claim' || point === 'after-heads' ? 1 : 1 + Math.floor(random() * 3);
    const delayMs = Math.floor(random() * 4);
    const queueName = `kill-${driver}-${index}`;
    const queueUrl = await newQueue(queueName);
    const child = startScript(KILL_DRAIN, {
      DRIVER: driver,
      DATABASE_URL: database.url,
      NEON_PROXY_PORT: String(proxy.port),
      SCHEMA: schema,
      WEBHOOK_SECRET: secret,
      ALLOW_HOST: `127.0.0.1:${ledger.port}`,
      LEASE_MS: String(LEASE_MS),
      SQS_ENDPOINT: queues.address,
      SQS_QUEUE_URL: queueUrl,
    });
    let seen = 0;
    let headsOut = false;
    child.onLine((line) => {
      if (line === 'way heads') headsOut = true;
      if (point === 'after-heads' && !headsOut) return;
      if (!line.startsWith(MARKER[point])) return;
      seen += 1;
      if (seen === occurrence) setTimeout(() => child.kill(), delayMs);
    });
    const exit = await child.exited;
    if (exit.signal !== 'SIGKILL' && exit.code !== 0) {
      throw new Error(`kill-drain (${driver}) failed: ${child.stderr()}`);
    }
    const settled = new Set(
      child.lines
        .filter((line) => line.startsWith('settled '))
        .flatMap((line) => line.slice('settled '.length).split(','))
        .filter(Boolean),
    );
    runs.push({
      agents: [`kill-drain/${child.pid}`, queueAgent(queueName)],
      point,
      killed: exit.signal === 'SIGKILL',
      settled,
      ways: child.lines.filter((line) => line.startsWith('way ')).map((line) => line.slice(4)),
    });
  }

  // Whatever the kills left claimed, or waiting out a retry's backoff (a send that outlived
  // the children's 1 s timeout on a loaded machine): a drain whose clock is past every lease
  // and every due time finishes it. The clock moves on before each pass, past any retry the
  // pass before scheduled.
  const store = outbox.store(db);
  const clock = fakeClock(new Date(Date.now() + LEASE_MS + 1_000));
  const pastEveryDue = async () => {
    const { rows } = await db.query(
      `SELECT (extract(epoch FROM max(due_at)) * 1000)::float8 AS due_ms
       FROM ${schema}.messages WHERE delivered_at IS NULL AND dead_at IS NULL`,
    );
    const dueMs = Number(rows[0]?.due_ms ?? 0);
    if (dueMs >= clock.now().getTime()) clock.set(new Date(dueMs + 1_000));
  };
  const recovery = loopbackWebhookSender(ledger.port, { secret, userAgent: 'recovery' });
  const recoveryQueue = sqsSender({
    queueUrl: await newQueue(`recovery-${driver}`),
    endpoint: queues.address,
    region: SQS_REGION,
    credentials: SQS_CREDENTIALS,
  });
  const senders = { webhook: recovery, [QUEUE_KIND]: recoveryQueue };
  for (let pass = 0; pass < 5; pass++) {
    await pastEveryDue();
    const report = await drainOnce({ store, senders, clock });
    if (report.claimed === 0) break;
  }
  const stats = await store.stats(clock.now());
  return { driver, committed, orderingKeyOf, runs, stats };
}

/**
 * Keyed messages whose first delivery came before the first delivery of one enqueued ahead of
 * them with their ordering key (a resend after a kill may come later: the receiver drops it).
 */
function outOfOrder(
  deliveries: readonly { key: string }[],
  orderingKeyOf: ReadonlyMap<string, string>,
  committed: readonly string[],
): string[] {
  const firstArrival = new Map<string, number>();
  deliveries.forEach((delivery, index) => {
    if (!firstArrival.has(delivery.key)) firstArrival.set(delivery.key, index);
  });
  const lastOfKey = new Map<string, number>();
  const passed: string[] = [];
  for (const key of committed) {
    const orderingKey = orderingKeyOf.get(key);
    const arrival = firstArrival.get(key);
    if (orderingKey === undefined || arrival === undefined) continue;
    if (arrival < (lastOfKey.get(orderingKey) ?? -1)) passed.push(`${key} (${orderingKey})`);
    lastOfKey.set(orderingKey, Math.max(arrival, lastOfKey.get(orderingKey) ?? -1));
  }
  return passed;
}

describe('drain processes SIGKILLed at random moments', () => {
  it(
    `over ${DRIVER_NAMES.join(', ')}: every committed message delivered, duplicates only after a kill between send and settle`,
    async () => {
      const random = seededRandom(20261130);
      const lanes = await Promise.all(DRIVER_NAMES.map((driver) => killLane(driver, random)));

      const committed = lanes.flatMap((lane) => lane.committed);
      const runs = lanes.flatMap((lane) => lane.runs);
      const queued = queueDeliveries();
      const result = account([...ledger.deliveries, ...queued], committed);
      for (const lane of lanes) {
        expect(lane.stats).toMatchObject({ pending: 0, claimed: 0, dead: 0 });
      }
      expect(result.lost).toEqual([]);
      expect(result.rolledBackSent).toEqual([]);
      // Each receiver's own arrival order: the ledger's for webhooks, the queues' for the rest.
      const passedAhead = lanes.flatMap((lane) => [
        ...outOfOrder(ledger.deliveries, lane.orderingKeyOf, lane.committed),
        ...outOfOrder(queued, lane.orderingKeyOf, lane.committed),
      ]);
      expect(passedAhead).toEqual([]);
      // Over every driver, processes were killed after claims of both ways of taking keyed rows:
      // keys' heads in due order (every run meant to, see headsRunKey), and the walk of the keys
      // (src/store/due-claim.ts).
      for (const lane of lanes) {
        const headsRuns = lane.runs.filter((run) => run.point === 'after-heads');
        expect({
          driver: lane.driver,
          killedAfterHeads: headsRuns.map((run) => run.killed && run.ways.includes('heads')),
        }).toEqual({ driver: lane.driver, killedAfterHeads: headsRuns.map(() => true) });
        expect({
          driver: lane.driver,
          walk: lane.runs.some((run) => run.killed && run.ways.includes('walk')),
        }).toEqual({ driver: lane.driver, walk: true });
      }
      const claimWays = (way: string) => runs.flatMap((run) => run.ways).filter((w) => w === way);

      const runByAgent = new Map(runs.flatMap((run) => run.agents.map((agent) => [agent, run])));
      const perKill: Record<string, { kills: number; duplicates: number }> = {};
      for (const point of KILL_POINTS) {
        perKill[point] = {
          kills: runs.filter((run) => run.point === point && run.killed).length,
          duplicates: 0,
        };
      }
      const unexplained: string[] = [];
      for (const [key, deliveries] of result.duplicated) {
        // Every delivery but the last must come from a process killed before it recorded it.
        for (const delivery of deliveries.slice(0, -1)) {
          const run = runByAgent.get(delivery.by);
          if (!run?.killed || run.settled.has(key)) {
            unexplained.push(`${key} by ${delivery.by}`);
            continue;
          }
          perKill[run.point]!.duplicates += 1;
        }
      }
      expect(unexplained).toEqual([]);
      const kills = runs.filter((run) => run.killed).length;
      expect(kills).toBeGreaterThanOrEqual(Math.min(50, RUNS_PER_DRIVER * 3) - 3);

      recordScenario('kill-points', {
        scenario: `kill points: drain processes over ${DRIVER_NAMES.join(', ')}`,
        runs: runs.length,
        messages: committed.length,
        faults: kills,
        injected: `SIGKILL after claim, mid-send, after send, mid-settle, after a claim taking heads; half webhooks, half SQS batches (${queued.length} queue copies); ${ORDERING_KEYS} ordering keys per driver and destination, per-key order checked at each receiver (${passedAhead.length} out of order); due claims ${claimWays('heads').length} taking heads, ${claimWays('walk').length} walking the keys and ${claimWays('walk shares').length} walking them for first shares only, ${claimWays('none').length} without keyed rows`,
        lost: result.lost.length,
        duplicated: result.extraDeliveries,
        rolledBackSent: result.rolledBackSent.length,
        duplicatesAllowed:
          result.extraDeliveries === 0
            ? ''
            : 'each first sent by a process SIGKILLed before its settle; resent under the same key',
        duplicatesPerKill: perKill,
      });
    },
    LONG_SCENARIO_TIMEOUT_MS,
  );
});
