/**
 * `outbox.config.ts`'s `drain`: every field reaches the drain as set. Each test writes a real
 * config file, runs `outbox drain` in-process over a real database, and reads the field's effect
 * where the drain leaves it: the claimed row (its lease and claim token, read by the config's
 * own sender through the CLI's connection), the outcomes written, the report. Each setting is
 * one whose effect the default would not have, so a layer that dropped or replaced it fails.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { OutboxCliDrainConfig } from '../../src/cli/config.js';
import { PermanentDeliveryError } from '../../src/core/errors.js';
import type { NewMessage } from '../../src/core/message.js';
import type { SqlExecutor } from '../../src/core/ports.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox } from '../../src/outbox.js';
import { useTestDatabase } from '../support/database.js';
import { waitFor } from '../support/wait-for.js';
import {
  type CliResult,
  newWebhookSecret,
  runOutboxInProcess,
  startOutboxInProcess,
  webhookDrainEnv,
} from './outbox-cli.js';

const database = useTestDatabase();
const KIND = 'probe.kind';
const outbox = createOutbox({
  kinds: { [KIND]: true },
  destinations: { [KIND]: () => 'probe-receiver' },
});

/** What the config's sender saw of its own row while sending it. */
interface SendSeen {
  n: number;
  claimToken: string;
  claimedAt: number;
  leaseMs: number;
  endedAt: number;
}

interface SendPlan {
  /** Sends wait until this many have been in flight at once, then `thenMs` more. */
  holdUntilInFlight?: number;
  thenMs?: number;
  /** Each send takes `n` times this long (a receiver answering message n later than n - 1). */
  staggerMs?: number;
  /** Never answer; only the drain's timeout ends the send. */
  hang?: boolean;
  fail?: boolean;
  /** Payloads with `dead: true` fail permanently. */
  deadWhenAsked?: boolean;
}

type ProbeSend = (
  message: { id: string; payload: unknown },
  signal: AbortSignal,
  db: SqlExecutor,
) => Promise<void>;
const probeGlobal = globalThis as { __drainProbe?: ProbeSend };

let dir: string;
let sends: SendSeen[];
let inFlight: number;
let mostInFlight: number;

beforeEach(async () => {
  await database.pool.query(
    'TRUNCATE outbox.messages, outbox.delivered_groups, outbox.destinations',
  );
  dir = await mkdtemp(join(tmpdir(), 'outbox-config-drain-'));
  sends = [];
  inFlight = 0;
  mostInFlight = 0;
});

afterEach(async () => {
  probeGlobal.__drainProbe = undefined;
  await rm(dir, { recursive: true, force: true });
});

function probeSend(plan: SendPlan): ProbeSend {
  return async (message, signal, db) => {
    inFlight += 1;
    mostInFlight = Math.max(mostInFlight, inFlight);
    try {
      const { rows } = await db.query(
        `SELECT claim_token, claimed_at,
                (extract(epoch FROM lease_expires_at - claimed_at) * 1000)::int AS lease_ms
           FROM outbox.messages WHERE id = $1`,
        [message.id],
      );
      const payload = message.payload as { n: number; dead?: boolean };
      const hold = plan.holdUntilInFlight;
      if (hold !== undefined) {
        await waitFor(`${hold} sends in flight`, () => mostInFlight >= hold, 5_000);
      }
      const waitMs = (plan.thenMs ?? 0) + (plan.staggerMs ?? 0) * payload.n;
      if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
      if (plan.hang) {
        await new Promise((_, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason)),
        );
      }
      if (plan.fail) throw new Error('the receiver answered 503');
      if (plan.deadWhenAsked && payload.dead) throw new PermanentDeliveryError('410 Gone');
      const row = rows[0] as { claim_token: string; claimed_at: Date; lease_ms: number };
      sends.push({
        n: payload.n,
        claimToken: row.claim_token,
        claimedAt: row.claimed_at.getTime(),
        leaseMs: row.lease_ms,
        endedAt: Date.now(),
      });
    } finally {
      inFlight -= 1;
    }
  };
}

/** The sends seen, one list per claim token. */
function sendsByClaim(): SendSeen[][] {
  const byToken = new Map<string, SendSeen[]>();
  for (const send of sends)
    byToken.set(send.claimToken, [...(byToken.get(send.claimToken) ?? []), send]);
  return [...byToken.values()];
}

/** Enqueues `count` probe messages (payload `{ n }`), or exactly `messages`. */
async function enqueue(messages: number | NewMessage[]): Promise<string[]> {
  const list =
    typeof messages === 'number'
      ? Array.from({ length: messages }, (_, n) => ({ kind: KIND, payload: { n } }))
      : messages;
  return outbox.enqueue(pgExecutor(database.pool), list);
}

/** Writes a config whose `drain` is `drain` and whose sender is `plan`, then runs `outbox drain`. */
async function drainWithConfig(
  drain: Record<string, unknown>,
  plan: SendPlan = {},
  args: readonly string[] = ['--once', '--json'],
): Promise<CliResult & { report?: Record<string, unknown> }> {
  probeGlobal.__drainProbe = probeSend(plan);
  await writeFile(join(dir, 'outbox.config.mjs'), configText(drain));
  const result = await runOutboxInProcess(['drain', ...args], drainEnv(), dir);
  const report =
    result.code === 0 && args.includes('--json') ? JSON.parse(result.stdout) : undefined;
  return { ...result, report };
}

function configText(drain: Record<string, unknown>): string {
  return `export default {
  kinds: { ${JSON.stringify(KIND)}: true },
  senders: ({ db }) => ({
    ${JSON.stringify(KIND)}: (message, signal) => globalThis.__drainProbe(message, signal, db),
  }),
  drain: ${JSON.stringify(drain)},
};
`;
}

function drainEnv(): Record<string, string> {
  return { DATABASE_URL: database.url, ...webhookDrainEnv(1, newWebhookSecret()) };
}

async function rowOf(key: string) {
  const { rows } = await database.pool.query<{
    state: string;
    last_error: string | null;
    due_at: Date;
  }>('SELECT state, last_error, due_at FROM outbox.all_messages WHERE key = $1', [key]);
  return rows[0]!;
}

/**
 * Drains one message whose send never answers, with `drain` in the config and `flags` after
 * `drain --once --json`: the timeout that cut it loose, as its recorded error says.
 */
async function timeoutOfHangingSend(
  drain: Record<string, unknown>,
  flags: readonly string[] = [],
): Promise<number | undefined> {
  const [key] = await enqueue(1);
  const result = await drainWithConfig(drain, { hang: true }, ['--once', '--json', ...flags]);
  expect(result.report).toMatchObject({ retried: 1 });
  const error = (await rowOf(key!)).last_error ?? '';
  const ms = /send timed out after (\d+) ms/.exec(error)?.[1];
  return ms === undefined ? undefined : Number(ms);
}

/**
 * A test per field a config's `drain` accepts, named `<field>: <effect>`: a field added to the
 * config without a test here does not compile.
 */
const FIELD_TESTS: Record<keyof OutboxCliDrainConfig, { effect: string; run(): Promise<void> }> = {
  batchSize: {
    effect: '3 claims three rows at a time',
    run: async () => {
      await enqueue(5);
      const result = await drainWithConfig({ batchSize: 3 });
      expect(result.report).toMatchObject({ delivered: 5 });
      expect(Math.max(...sendsByClaim().map((claim) => claim.length))).toBe(3);
    },
  },
  concurrency: {
    effect: '2 sends two at a time',
    run: async () => {
      await enqueue(4);
      const result = await drainWithConfig({ concurrency: 2 }, { holdUntilInFlight: 2 });
      expect(result.report).toMatchObject({ delivered: 4 });
      expect(mostInFlight).toBe(2);
    },
  },
  leaseMs: {
    effect: '90000 leases each claimed row for 90 s',
    run: async () => {
      await enqueue(1);
      await drainWithConfig({ leaseMs: 90_000 });
      expect(sends.map(({ leaseMs }) => leaseMs)).toEqual([90_000]);
    },
  },
  sendTimeoutMs: {
    effect: '300 cuts a send loose after 300 ms',
    run: async () => {
      expect(await timeoutOfHangingSend({ sendTimeoutMs: 300 })).toBe(300);
    },
  },
  roundTripReserveMs: {
    effect: '7000 is what the lease must cover beside the send, so this lease is refused',
    run: async () => {
      await enqueue(1);
      const result = await drainWithConfig({
        leaseMs: 10_000,
        sendTimeoutMs: 3_000,
        roundTripReserveMs: 7_000,
      });
      expect(result.code).toBe(3);
      expect(result.stderr).toContain('roundTripReserveMs (7000)');
      expect(sends).toHaveLength(0);
    },
  },
  backoff: {
    effect: 'an hour retries a failed send an hour later',
    run: async () => {
      const [key] = await enqueue(1);
      const result = await drainWithConfig(
        { backoff: { baseMs: 3_600_000, capMs: 3_600_000 } },
        { fail: true },
      );
      expect(result.report).toMatchObject({ retried: 1 });
      const waitMs = (await rowOf(key!)).due_at.getTime() - Date.now();
      expect(waitMs).toBeGreaterThan(3_590_000);
      expect(waitMs).toBeLessThanOrEqual(3_600_000);
    },
  },
  deadHeadBlocks: {
    effect: 'false delivers the next message of an ordering key behind a dead one',
    run: async () => {
      const [, next] = await enqueue([
        { kind: KIND, payload: { n: 0, dead: true }, orderingKey: 'order-1' },
        { kind: KIND, payload: { n: 1 }, orderingKey: 'order-1' },
      ]);
      const result = await drainWithConfig({ deadHeadBlocks: false }, { deadWhenAsked: true });
      expect(result.report).toMatchObject({ dead: 1, delivered: 1 });
      expect((await rowOf(next!)).state).toBe('delivered');
    },
  },
  destinationHealth: {
    effect: '{ failuresToPause: 2 } pauses the receiver after two failures in a row',
    run: async () => {
      const drain = { destinationHealth: { failuresToPause: 2 } };
      await enqueue(2);
      expect((await drainWithConfig(drain, { fail: true })).report).toMatchObject({ retried: 2 });
      const { rows } = await database.pool.query(
        "SELECT failures, paused_by FROM outbox.destinations WHERE destination = 'probe-receiver'",
      );
      expect(rows).toEqual([{ failures: 2, paused_by: 'breaker' }]);
      // Two more for the paused receiver wait, unclaimed.
      await enqueue(2);
      expect((await drainWithConfig(drain)).report).toMatchObject({ claimed: 0 });
    },
  },
  prefetch: {
    effect: 'false claims again only once a send of the last claim has ended',
    run: async () => {
      await enqueue(6);
      const result = await drainWithConfig(
        { prefetch: false, concurrency: 2, batchSize: 3 },
        { holdUntilInFlight: 2, thenMs: 30 },
      );
      expect(result.report).toMatchObject({ delivered: 6 });
      const [first, second] = sendsByClaim().sort((a, b) => a[0]!.claimedAt - b[0]!.claimedAt);
      const firstEnded = Math.min(...first!.map(({ endedAt }) => endedAt));
      expect(second![0]!.claimedAt).toBeGreaterThanOrEqual(firstEnded);
    },
  },
  settleGroupSize: {
    effect: '2 writes outcomes once two wait (with a settle window too long to matter)',
    run: async () => {
      await enqueue(4);
      const result = await drainWithConfig(
        { settleGroupSize: 2, settleGroupMs: 20_000 },
        { holdUntilInFlight: 4 },
      );
      expect(result.report).toMatchObject({ delivered: 4, settles: 2 });
    },
  },
  settleGroupMs: {
    effect: '20000 lets outcomes 40 ms apart wait for one write',
    run: async () => {
      await enqueue(4);
      const result = await drainWithConfig({ settleGroupMs: 20_000 }, { staggerMs: 40 });
      expect(result.report).toMatchObject({ delivered: 4, settles: 1 });
    },
  },
  budgetMs: {
    effect: '2000 gives each send half of it',
    run: async () => {
      expect(await timeoutOfHangingSend({ budgetMs: 2_000 })).toBe(1_000);
    },
  },
  intervalMs: {
    effect: '2000 rests two seconds between idle continuous drains',
    run: async () => {
      probeGlobal.__drainProbe = probeSend({});
      await writeFile(join(dir, 'outbox.config.mjs'), configText({ intervalMs: 2_000 }));
      const stop = new AbortController();
      const run = startOutboxInProcess(['drain'], drainEnv(), stop.signal, dir);
      await waitFor('the first tick', () => run.stdout().includes('tick 1:'));
      stop.abort();
      const { code, stderr } = await run.done;
      expect(code).toBe(0);
      expect(stderr).toContain('resting 2s when idle');
    },
  },
};

describe("outbox.config.ts's drain settings reach the drain", () => {
  for (const [field, { effect, run }] of Object.entries(FIELD_TESTS))
    it(`${field}: ${effect}`, run);
});

describe('drain settings meeting a budget', () => {
  it('flags win over the config: --batch-size 2 over batchSize: 3', async () => {
    await enqueue(5);
    await drainWithConfig({ batchSize: 3 }, {}, ['--once', '--json', '--batch-size', '2']);
    expect(Math.max(...sendsByClaim().map((claim) => claim.length))).toBe(2);
  });

  it('a send timeout smaller than the budget allows is kept, not replaced by the default', async () => {
    const timeoutMs = await timeoutOfHangingSend({ leaseMs: 10_000, sendTimeoutMs: 400 }, [
      '--budget-ms',
      '30000',
    ]);
    expect(timeoutMs).toBe(400);
  });

  it('a settle window the budget cannot fit exits 3 naming it, sending nothing', async () => {
    await enqueue(1);
    const result = await drainWithConfig({ settleGroupMs: 1_000 }, {}, [
      '--once',
      '--budget-ms',
      '1000',
    ]);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(
      'a budget of 1000 ms cannot fit one claim, send and settle: sendTimeoutMs (500) + 2 x roundTripReserveMs (166) + settleGroupMs (1000) = 1832 ms',
    );
    expect(sends).toHaveLength(0);
  });
});
