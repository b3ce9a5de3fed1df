/**
 * One destination down (issue 28): ten webhook receivers on loopback (ten ports, so ten
 * origins and ten destinations), 1,000 messages each, written by the app in waves while two
 * overlapping loops of `drainOnce` over node-pg send them with the real webhook sender. Run A:
 * all ten healthy. Run B: the tenth answers 503 with Retry-After, then 500, then refuses
 * connections (nothing listens on its port), then listens again on the same port and accepts.
 *
 * Checked: the healthy nine deliver at least 90% as fast in B as in A (medians over four runs
 * of each, from the receivers' arrival times); while the tenth is paused it gets at most one
 * probe per pause window beyond the sends already out when the pause began
 * (support/pause-windows.ts); every message of every receiver is delivered exactly once, the
 * tenth's after it recovers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DestinationChange } from '../../src/core/destination-health.js';
import { drainOnce } from '../../src/core/drain.js';
import type { DrainOptions } from '../../src/core/drain-settings.js';
import { MAX_MESSAGES_PER_ENQUEUE } from '../../src/core/message.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { webhookSender } from '../../src/senders/webhook/webhook-sender.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { useTestDatabase } from '../support/database.js';
import { seededRandom } from '../support/drain-fixtures.js';
import { waitFor } from '../support/wait-for.js';
import {
  type Accounting,
  account,
  type DeliveryLedger,
  type ReceiverBehaviour,
  startDeliveryLedger,
} from './support/delivery-ledger.js';
import { observeDestination } from './support/destination-observer.js';
import {
  type Contact,
  claimsOfContacts,
  pauseWindows,
  type WindowFigures,
  windowFigures,
} from './support/pause-windows.js';
import { recordScenario } from './support/scenario-results.js';

const database = useTestDatabase();
const RECEIVERS = 10;
const MESSAGES_PER_RECEIVER = 1_000;
/**
 * Runs alternate A B B A A B B A, neither kind always first, after an unmeasured warm-up run
 * with the tenth down (so B's code paths are compiled before either kind is timed), and the
 * rates compared are each kind's median. The rate is set by the receivers' latency, not by the
 * cores (see CONCURRENCY): single runs of one kind spread by 3% alone and by up to 16% in the
 * full suite (A 278, 287, 295; B 251, 270, 293), the lowest the first B after a healthy warm-up.
 */
const RUN_ORDER = ['a1', 'b1', 'b2', 'a2', 'a3', 'b3', 'b4', 'a4'] as const;
const WARM_UP_PER_RECEIVER = 200;
/** A wave is one enqueue: 100 messages per receiver, the 1,000 one call takes. */
const PER_RECEIVER_PER_WAVE = MAX_MESSAGES_PER_ENQUEUE / RECEIVERS;
/** Written before the drains start, so their first claims already find a backlog. */
const WAVES_BEFORE_DRAINS = 2;
/**
 * The app writes its next wave when fewer of the nine's messages than this wait: enough for
 * about a second of sends, so the drains never run dry, and few enough that each wave lands
 * near the head of due order. A paused destination's fresh messages are then where claims look,
 * and every claim must pass over them; a backlog written all at once would keep them behind
 * thousands of others, and the pause's parking alone would hold them back.
 */
const NEXT_WAVE_BELOW = 300;
const DRAINS = 2;
/**
 * Sends in flight per drain. 2 x 8 sends to receivers that take 40 ms on average allow about
 * 400 a second, and the test process (sender, drains, receivers) and PostgreSQL use about half
 * of two cores at that: the receivers set the rate, as they do for a drain in production. With
 * 2 x 16 sends the rate was the cores', so it measured the outage's extra PostgreSQL CPU
 * competing with the test process for them, and moved with whatever else ran
 * (docs/reliability.md, "One destination down").
 */
const CONCURRENCY = 8;
const BATCH_SIZE = 100;
/**
 * The default breaker threshold, with pauses cut from 30 s (doubling to 10 min) to 100 ms
 * (doubling to 400 ms), so each second or two of a fault holds several windows and the recovery
 * is probed within 400 ms.
 */
const HEALTH = { failuresToPause: 5, pauseMs: 100, maxPauseMs: 400 };
/** Retries cut likewise (default: 1 s doubling to 15 min), so no run ends waiting on one. */
const BACKOFF = { baseMs: 100, capMs: 1_000 };
/**
 * Attempts per message. The default 10 spans about 17 minutes of the default backoff, but about
 * 7 s of the cut one above, less than the tenth's outage (the nine going from 20% to 70%: 13 s
 * at 340 msg/s, longer on a slower machine): a message of the tenth retried at every chance could
 * then spend them all and be dead-lettered, as one was in a CI run on 12-06. That is the retry
 * policy working, not what this scenario checks: 100 tries at up to 1 s apart outlast the run's
 * timeout, so every message must be delivered.
 */
const MAX_ATTEMPTS = 100;
/** The broken receiver's 503s ask for a second, as a load balancer draining a backend does. */
const RETRY_AFTER_SECONDS = 1;
/**
 * Shares of the healthy nine's messages delivered at which the tenth moves to its next fault,
 * so the outage spans the nine's run however fast this machine is, and their last 30% overlap
 * the tenth's recovery.
 */
const PHASE_AT = { http500: 0.2, refusing: 0.45, recovered: 0.7 };
/** A drain loop's wait after a drain that found nothing due: a Node schedule's tick. */
const IDLE_MS = 20;
const RUN_TIMEOUT_MS = 90_000;
/** Nine runs of about 30 s (the warm-up shorter): more than the suite's 240 s per test. */
const SCENARIO_TIMEOUT_MS = 480_000;
/** Acceptance (issue 28): the healthy nine within 10% of their rate with all ten healthy. */
const MIN_RATE_RATIO = 0.9;
/** Node's own default: its clients (undici) reuse connections, as behind a load balancer. */
const RECEIVER_KEEP_ALIVE_MS = 5_000;

const random = seededRandom(28);
/** Receivers answer in 20 to 60 ms, a service in another region. */
const latencyMs = () => 20 + random() * 40;
let receivers: DeliveryLedger[];
const senderConfig = () => ({
  secret: generateWebhookSecret(),
  environment: 'development' as const,
  allowHosts: receivers.map((receiver) => `127.0.0.1:${receiver.port}`),
  resolveHost: false as const,
});

beforeAll(async () => {
  receivers = await Promise.all(
    Array.from({ length: RECEIVERS }, () =>
      startDeliveryLedger({ keepAliveMs: RECEIVER_KEEP_ALIVE_MS }),
    ),
  );
  for (const receiver of receivers) receiver.delayMs = latencyMs;
});
afterAll(async () => {
  await Promise.all(receivers?.map((receiver) => receiver.close()) ?? []);
});

type Phase = 'http-503' | 'http-500' | 'refusing' | 'recovered';

interface RunFigures {
  name: string;
  drains: number;
  messages: number;
  /** The healthy nine's deliveries per second, their first arrival to their last. */
  ninePerSecond: number;
  accounting: Accounting;
  /** Run B: the tenth's pause windows and its failed tries. */
  broken?: BrokenFigures;
}

interface BrokenFigures {
  windows: WindowFigures[];
  /** Requests answered with each error status. */
  answered: Record<number, number>;
  refused: number;
}

/** Runs A (`broken` false) or B over a fresh outbox, the app writing it wave after wave. */
async function run(name: string, broken: boolean, perReceiver = MESSAGES_PER_RECEIVER) {
  const outbox = createOutbox({ schema: `destination_down_${name}` });
  const db = pgExecutor(database.pool);
  await outbox.migrate(db);
  const tenth = receivers[RECEIVERS - 1]!;
  const since = receivers.map((receiver) => receiver.deliveries.length);
  const deliveriesOf = (index: number) => receivers[index]!.deliveries.slice(since[index]);
  const arrived = (indices: number[]) =>
    indices.reduce((sum, index) => sum + receivers[index]!.deliveries.length - since[index]!, 0);
  const all = receivers.map((_, index) => index);
  const nine = all.slice(0, -1);

  // The app: waves of 100 messages per receiver, interleaved, so every claim holds messages for
  // every receiver; a wave whenever the nine's backlog runs low.
  const committed: string[] = [];
  const waves = perReceiver / PER_RECEIVER_PER_WAVE;
  const writeWave = async (wave: number) => {
    const messages = Array.from({ length: PER_RECEIVER_PER_WAVE * RECEIVERS }, (_, index) => ({
      kind: 'webhook',
      payload: {
        url: `${receivers[index % RECEIVERS]!.url}/hooks`,
        body: { run: name, wave, n: Math.floor(index / RECEIVERS) },
      },
      maxAttempts: MAX_ATTEMPTS,
    }));
    committed.push(...(await outbox.enqueue(db, messages)));
  };
  for (let wave = 0; wave < WAVES_BEFORE_DRAINS; wave++) await writeWave(wave);
  let written = false;
  const writeTheRest = async () => {
    for (let wave = WAVES_BEFORE_DRAINS; wave < waves; wave++) {
      const nineWaiting = () => (committed.length * nine.length) / RECEIVERS - arrived(nine);
      await waitFor('the nine to need more', () => nineWaiting() < NEXT_WAVE_BELOW, RUN_TIMEOUT_MS);
      await writeWave(wave);
    }
    written = true;
  };

  const store = outbox.store(db);
  const observed = observeDestination(store, webhookSender(senderConfig()), tenth.url);
  const announced: DestinationChange[] = [];
  const outage = { phase: 'http-503' as Phase, answered: {} as Record<number, number> };
  if (broken) tenth.behave(brokenReceiver(outage, observed.contacts));
  const options: DrainOptions = {
    store: observed.store,
    senders: { webhook: observed.sender },
    batchSize: BATCH_SIZE,
    concurrency: CONCURRENCY,
    leaseMs: 10_000,
    sendTimeoutMs: 2_000,
    roundTripReserveMs: 500,
    destinationHealth: HEALTH,
    backoff: BACKOFF,
    onDestinationChange: (change) => {
      announced.push(change);
    },
  };

  const deadline = Date.now() + RUN_TIMEOUT_MS;
  let stopped = false;
  const finished = () =>
    stopped ||
    Date.now() > deadline ||
    (written &&
      arrived(all) >= committed.length &&
      new Set(all.flatMap((index) => deliveriesOf(index).map((d) => d.key))).size >=
        committed.length);
  let drains = 0;
  const loop = async () => {
    while (!finished()) {
      const report = await drainOnce(options);
      drains += 1;
      if (report.claimed === 0) await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    }
  };
  const breakAndRecover = async () => {
    const share = (fraction: number) => () => arrived(nine) >= fraction * nine.length * perReceiver;
    await waitFor('the nine 20% delivered', share(PHASE_AT.http500), RUN_TIMEOUT_MS);
    outage.phase = 'http-500';
    await waitFor('the nine 45% delivered', share(PHASE_AT.refusing), RUN_TIMEOUT_MS);
    outage.phase = 'refusing';
    await tenth.refuseConnections();
    await waitFor('the nine 70% delivered', share(PHASE_AT.recovered), RUN_TIMEOUT_MS);
    outage.phase = 'recovered';
    await tenth.acceptConnections();
  };
  const stopOnFailure = (task: Promise<void>) =>
    task.catch((error: unknown) => {
      stopped = true;
      throw error;
    });
  try {
    await Promise.all([
      ...Array.from({ length: DRAINS }, loop),
      stopOnFailure(writeTheRest()),
      ...(broken ? [stopOnFailure(breakAndRecover())] : []),
    ]);
  } finally {
    tenth.behave(undefined);
    if (outage.phase === 'refusing') await tenth.acceptConnections();
  }

  const accounting = account(
    all.flatMap((index) => deliveriesOf(index)),
    committed,
  );
  expect(
    await store.stats(new Date()),
    `${name}: everything delivered within ${RUN_TIMEOUT_MS} ms`,
  ).toMatchObject({ pending: 0, claimed: 0, dead: 0 });
  const nineArrivals = nine.flatMap((index) => deliveriesOf(index).map((d) => d.at));
  const nineSeconds = (Math.max(...nineArrivals) - Math.min(...nineArrivals)) / 1000;
  const figures: RunFigures = {
    name,
    drains,
    messages: committed.length,
    ninePerSecond: nineArrivals.length / nineSeconds,
    accounting,
  };
  if (!broken) {
    expect(announced).toEqual([]);
    return figures;
  }
  // Only the tenth ever paused, every change was announced, and it ends closed.
  const changes = [...observed.changes].sort((a, b) => a.settledAt - b.settledAt);
  expect(new Set(announced.map((change) => change.destination))).toEqual(new Set([tenth.url]));
  const described = (list: DestinationChange[]) =>
    list.map((change) => `${change.change} ${change.pausedUntil?.getTime()}`).sort();
  expect(described(announced)).toEqual(described(changes.map(({ change }) => change)));
  expect(changes.at(-1)?.change.change).toBe('resumed');
  const rows = await store.destinations().list(new Date());
  expect(rows.map((row) => [row.destination, row.state])).toEqual([[tenth.url, 'closed']]);
  // Every send of the tenth's messages shows as a try on it: a request, or a refused connection.
  const contacts = claimsOfContacts(observed.contacts, observed.claims);
  expect(contacts.length).toBe(observed.claims.length);
  const tenthArrivals = deliveriesOf(RECEIVERS - 1).map((d) => d.at);
  figures.broken = {
    windows: windowFigures(
      pauseWindows(changes, Math.max(...tenthArrivals) + 1),
      observed.claims,
      contacts,
    ),
    answered: outage.answered,
    refused: observed.refused(),
  };
  return figures;
}

/**
 * The tenth receiver while it is down: every request logged as a try on it, answered after the
 * usual latency with the phase's error; once recovered, left to the ledger (accepted).
 */
function brokenReceiver(
  outage: { phase: Phase; answered: Record<number, number> },
  contacts: Contact[],
): ReceiverBehaviour {
  return (request, response) => {
    contacts.push({ key: String(request.headers['webhook-id']), at: Date.now() });
    if (outage.phase === 'recovered') return false;
    // A request that came in as it stopped listening: it is down, so a 500.
    const status = outage.phase === 'http-503' ? 503 : 500;
    outage.answered[status] = (outage.answered[status] ?? 0) + 1;
    const headers = status === 503 ? { 'retry-after': String(RETRY_AFTER_SECONDS) } : {};
    setTimeout(() => {
      if (response.destroyed) return;
      response.writeHead(status, { ...headers, 'content-type': 'text/plain' }).end('unavailable');
    }, latencyMs());
    return true;
  };
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle)
    ? (sorted[middle - 1]! + sorted[middle]!) / 2
    : sorted[Math.floor(middle)]!;
};

describe('one destination down among ten', () => {
  it(
    'keeps the healthy nine within 10% of their rate, probes the tenth once per pause, delivers all once',
    async () => {
      const warmUp = await run('warm_up', true, WARM_UP_PER_RECEIVER);
      const runs: RunFigures[] = [warmUp];
      for (const name of RUN_ORDER) runs.push(await run(name, name.startsWith('b')));
      for (const figures of runs) {
        expect(figures.accounting.lost, figures.name).toEqual([]);
        expect(figures.accounting.extraDeliveries, figures.name).toBe(0);
        expect(figures.accounting.rolledBackSent, figures.name).toEqual([]);
      }
      const healthy = runs.filter((figures) => figures.name.startsWith('a'));
      const down = runs.filter((figures) => figures.name.startsWith('b'));
      for (const { broken } of down) {
        const { windows } = broken!;
        for (const window of windows) {
          // Nothing of the tenth is claimed while a pause is open; after it ends, one probe.
          expect(window.claims.length, JSON.stringify(window)).toBeLessThanOrEqual(1);
          for (const claim of window.claims) {
            expect(claim.now).toBeGreaterThanOrEqual(window.pausedUntil);
          }
          expect(window.contactsBeyondInFlight, JSON.stringify(window)).toBeLessThanOrEqual(1);
        }
        // Every fault happened: a pause asked for, a breaker's, connections refused.
        expect(windows.some((window) => window.pausedBy === 'retry-after')).toBe(true);
        expect(windows.some((window) => window.pausedBy === 'breaker')).toBe(true);
        expect(broken!.refused).toBeGreaterThan(0);
        expect(windows.filter((window) => window.claims.length === 1).length).toBeGreaterThan(2);
      }
      const rateA = median(healthy.map((figures) => figures.ninePerSecond));
      const rateB = median(down.map((figures) => figures.ninePerSecond));

      const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
      const brokenFigures = down.map(({ broken }) => broken!);
      const windows = brokenFigures.flatMap((broken) => broken.windows);
      const answered = (status: number) => sum(brokenFigures.map((b) => b.answered[status] ?? 0));
      const refused = sum(brokenFigures.map((broken) => broken.refused));
      const rates = (list: RunFigures[]) =>
        list.map((figures) => Math.round(figures.ninePerSecond)).join(', ');
      recordScenario('destination-down', {
        scenario: `one destination down: 10 webhook receivers x ${MESSAGES_PER_RECEIVER} (20-60 ms), the tenth 503 (Retry-After), 500, refusing, back; ${DRAINS} overlapping drainOnce loops, ${CONCURRENCY} sends each`,
        runs: sum(runs.map((figures) => figures.drains)),
        messages: sum(runs.map((figures) => figures.messages)),
        faults: answered(503) + answered(500) + refused,
        injected: `${answered(503)} 503s, ${answered(500)} 500s, ${refused} connections refused over ${down.length} outages; healthy nine ${Math.round(rateB)} msg/s with the tenth down vs ${Math.round(rateA)} all healthy (x${(rateB / rateA).toFixed(2)}; medians of runs in order ${RUN_ORDER.join(' ')}: A ${rates(healthy)}, B ${rates(down)}); ${windows.length} pauses, ${sum(windows.map((w) => w.claims.length))} probes, at most ${Math.max(...windows.map((w) => w.contactsBeyondInFlight))} per pause beyond at most ${Math.max(...windows.map((w) => w.inFlight))} sends in flight`,
        lost: sum(runs.map((figures) => figures.accounting.lost.length)),
        duplicated: sum(runs.map((figures) => figures.accounting.extraDeliveries)),
        rolledBackSent: sum(runs.map((figures) => figures.accounting.rolledBackSent.length)),
        duplicatesAllowed: '',
      });
      expect(rateB).toBeGreaterThanOrEqual(MIN_RATE_RATIO * rateA);
    },
    SCENARIO_TIMEOUT_MS,
  );
});
