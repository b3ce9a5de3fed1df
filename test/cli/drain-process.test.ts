/**
 * `outbox drain` as the real process, delivering webhooks to a receiver on loopback: the
 * one-shot JSON report, the continuous loop, and what SIGINT and SIGTERM do to it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SAME_PRESS_MS } from '../../src/cli/cli-errors.js';
import { useTestDatabase } from '../support/database.js';
import { waitFor } from '../support/wait-for.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import {
  messageState,
  newWebhookSecret,
  type OutboxProcess,
  runOutbox,
  runOutboxInProcess,
  startOutbox,
  webhookDrainEnv,
} from './outbox-cli.js';

const database = useTestDatabase();
let receiver: WebhookReceiver;
let drains: OutboxProcess[] = [];

beforeEach(async () => {
  await database.pool.query('TRUNCATE outbox.messages, outbox.delivered_groups');
  receiver = await startWebhookReceiver();
});

afterEach(async () => {
  // A failed test must not leave a drain running.
  for (const drain of drains) if (drain.child.exitCode === null) drain.child.kill('SIGKILL');
  drains = [];
  await receiver.close();
});

function drainEnv(): Record<string, string> {
  return { DATABASE_URL: database.url, ...webhookDrainEnv(receiver.port, newWebhookSecret()) };
}

function startDrain(args: string[]): OutboxProcess {
  const drain = startOutbox(['drain', ...args], drainEnv());
  drains.push(drain);
  return drain;
}

/** Enqueues a webhook to the receiver; returns the message id. */
async function enqueueWebhook(body: Record<string, unknown> = {}): Promise<string> {
  const payload = JSON.stringify({ url: `${receiver.url}/hook`, body });
  const result = await runOutboxInProcess(['enqueue', '--kind', 'webhook', '--payload', payload], {
    DATABASE_URL: database.url,
  });
  expect(result.code).toBe(0);
  const { rows } = await database.pool.query('SELECT id FROM outbox.messages WHERE key = $1', [
    result.stdout.trim(),
  ]);
  return String(rows[0].id);
}

describe('outbox drain (the process)', () => {
  it('--once --json prints the drain report as the only thing on stdout', async () => {
    const ids = [await enqueueWebhook({ n: 1 }), await enqueueWebhook({ n: 2 })];
    const result = await runOutbox(['drain', '--once', '--json'], drainEnv());
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report).toEqual({
      claimed: 2,
      delivered: 2,
      retried: 0,
      dead: 0,
      released: 0,
      stale: 0,
      batches: 2,
      // One settle write, or two when the sends finish more than settleGroupMs apart.
      settles: expect.any(Number),
      roundTrips: expect.any(Number),
      sends: 2,
      senderSubrequests: 0,
      durationMs: expect.any(Number),
      stopReason: 'empty',
    });
    expect([1, 2]).toContain(report.settles);
    // And the run's record for metrics, at its end.
    expect(report.roundTrips).toBe(report.batches + report.settles + 1);
    expect(receiver.received.map((request) => JSON.parse(request.body))).toEqual(
      expect.arrayContaining([{ n: 1 }, { n: 2 }]),
    );
    for (const id of ids) expect(await messageState(database.pool, id)).toBe('delivered');
  });

  it('keeps draining on its interval with a line per tick; SIGINT stops it with a summary, exit 0', async () => {
    const drain = startDrain(['--interval', '200ms']);
    await waitFor('the first tick', () => / tick 1: /.test(drain.stdout()));
    const id = await enqueueWebhook();
    await waitFor('the receiver to get the webhook', () => receiver.received.length === 1);
    await waitFor('a tick reporting the delivery', () => /: delivered 1,/.test(drain.stdout()));
    drain.child.kill('SIGINT');
    const result = await drain.exited;
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    for (const line of lines.slice(0, -1)) {
      expect(line).toMatch(
        /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ tick \d+: delivered \d, retried 0, dead 0, released 0, lag \S+$/,
      );
    }
    expect(lines.at(-1)).toMatch(
      /^stopped after \d+ ticks in \S+( \S+)?: delivered 1, retried 0, dead 0, released 0$/,
    );
    expect(result.stderr).toContain(
      'outbox: SIGINT: stopping once the drain in flight records its outcomes',
    );
    expect(await messageState(database.pool, id)).toBe('delivered');
  });

  /**
   * A drain started with one webhook held at the receiver, sent `signal` once the send is on the
   * wire, and acknowledging it.
   */
  async function signalMidSend(signal: 'SIGINT' | 'SIGTERM') {
    receiver.hold();
    const id = await enqueueWebhook();
    const drain = startDrain([]);
    await waitFor('the send to reach the receiver', () => receiver.received.length === 1);
    drain.child.kill(signal);
    await waitFor(`the drain to acknowledge ${signal}`, () =>
      drain.stderr().includes(`${signal}: stopping`),
    );
    return { id, drain };
  }

  it('on SIGTERM mid-send, lets the send finish and records it before exiting 0', async () => {
    const { id, drain } = await signalMidSend('SIGTERM');
    expect(await messageState(database.pool, id)).toBe('claimed');
    receiver.release();
    const result = await drain.exited;
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/stopped after 1 tick in \S+( \S+)?: delivered 1, /);
    expect(await messageState(database.pool, id)).toBe('delivered');
    expect(receiver.received).toHaveLength(1);
  });

  it('one Ctrl-C that arrives twice (as under npm) stops gracefully, exit 0', async () => {
    const { id, drain } = await signalMidSend('SIGINT');
    // npm's forwarded copy, moments after the terminal's.
    drain.child.kill('SIGINT');
    await new Promise((resolve) => setTimeout(resolve, 100));
    receiver.release();
    const result = await drain.exited;
    expect(result.code).toBe(0);
    expect(result.stderr).not.toContain('SIGINT again');
    expect(await messageState(database.pool, id)).toBe('delivered');
  });

  it('a second SIGINT exits 130 at once, leaving the message in flight to its lease', async () => {
    const { id, drain } = await signalMidSend('SIGINT');
    // A second press, not the first one arriving twice.
    await new Promise((resolve) => setTimeout(resolve, SAME_PRESS_MS + 100));
    drain.child.kill('SIGINT');
    const result = await drain.exited;
    expect(result.code).toBe(130);
    expect(result.stderr).toContain(
      'outbox: SIGINT again: exiting now; messages in flight stay claimed until their lease ends',
    );
    expect(await messageState(database.pool, id)).toBe('claimed');
  });

  it('with --config before the command, takes its interval and still stops gracefully on SIGTERM', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'outbox-drain-config-'));
    try {
      const config = join(dir, 'outbox.config.mjs');
      await writeFile(config, 'export default { drain: { intervalMs: 150 } };\n');
      const drain = startOutbox(['--config', config, 'drain'], drainEnv());
      drains.push(drain);
      await waitFor('the loop to start', () => drain.stderr().includes('resting 150ms when idle'));
      await waitFor('a third tick', () => / tick 3: /.test(drain.stdout()));
      drain.child.kill('SIGTERM');
      const result = await drain.exited;
      expect(result.code).toBe(0);
      expect(result.stderr).toContain('outbox: SIGTERM: stopping once the drain in flight');
      expect(result.stdout).toMatch(/stopped after \d+ ticks in /);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
