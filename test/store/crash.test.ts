import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { drainOnce } from '../../src/core/drain.js';
import { useTestDatabase } from '../support/database.js';
import { fakeClock, freshOutbox, recordingSender } from '../support/drain-fixtures.js';
import { DRIVER_NAMES, useDriver } from '../support/drivers.js';

const database = useTestDatabase();
const CRASH_DRAIN = fileURLToPath(new URL('../fixtures/crash-drain.ts', import.meta.url));
/** The child's lease (see the fixture); the later drain's clock jumps past it. */
const CHILD_LEASE_MS = 60_000;

/** Starts the crash fixture and SIGKILLs it as soon as it prints a line starting with `killAt`. */
async function runUntilKilled(env: Record<string, string>, killAt: string): Promise<string[]> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', CRASH_DRAIN], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => {
    child.on('exit', (_, signal) => resolve(signal));
  });
  const reached = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`child never reached ${killAt}: ${stderr}`)),
      30_000,
    );
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      if (line.startsWith(killAt)) {
        clearTimeout(timer);
        child.kill('SIGKILL');
        resolve();
      }
    });
    child.on('exit', () => reject(new Error(`child exited before ${killAt}: ${stderr}`)));
  });
  try {
    await reached;
  } finally {
    child.kill('SIGKILL');
  }
  expect(await exited).toBe('SIGKILL');
  return lines;
}

describe.each(DRIVER_NAMES)('a drain killed mid-flight, through %s', (driverName) => {
  const driver = useDriver(driverName, database);

  async function setUp() {
    const { outbox, store, schema } = await freshOutbox(driver);
    const keys = await outbox.enqueue(
      driver.db,
      Array.from({ length: 5 }, (_, index) => ({ kind: 'test.kind', payload: { index } })),
    );
    const sentLog = join(mkdtempSync(join(tmpdir(), 'outbox-crash-')), 'sent.log');
    writeFileSync(sentLog, '');
    const env = {
      DRIVER: driverName,
      DATABASE_URL: database.url,
      NEON_PROXY_PORT: String(driver.proxyPort),
      SCHEMA: schema,
      SENT_LOG: sentLog,
    };
    const sentByChild = () => readFileSync(sentLog, 'utf8').split('\n').filter(Boolean);
    return { store, keys, env, sentByChild };
  }

  it('killed right after claiming: a later drain delivers everything once the lease passes', async () => {
    const { store, keys, env, sentByChild } = await setUp();
    await runUntilKilled({ ...env, CRASH_AT: 'after-claim' }, 'claimed');
    expect(sentByChild()).toEqual([]);
    expect((await store.stats(new Date())).claimed).toBe(5);

    const sender = recordingSender();
    const clock = fakeClock();
    // While the dead drain's lease lasts, nobody else may take its rows.
    const during = await drainOnce({ store, senders: { 'test.kind': sender.send }, clock });
    expect(during.claimed).toBe(0);

    clock.advance(CHILD_LEASE_MS + 1000);
    const after = await drainOnce({ store, senders: { 'test.kind': sender.send }, clock });
    expect(after.delivered).toBe(5);
    expect(sender.delivered.sort()).toEqual([...keys].sort());
    // The crashed claim counted an attempt; the redelivery is the second.
    expect(sender.calls.every((call) => call.attempt === 2)).toBe(true);
  });

  it('killed after sending but before settling: each message goes out again with the same key', async () => {
    const { store, keys, env, sentByChild } = await setUp();
    await runUntilKilled({ ...env, CRASH_AT: 'after-send' }, 'settling');
    expect(sentByChild().sort()).toEqual([...keys].sort());

    const sender = recordingSender();
    const clock = fakeClock(new Date(Date.now() + CHILD_LEASE_MS + 1000));
    const report = await drainOnce({ store, senders: { 'test.kind': sender.send }, clock });
    expect(report.delivered).toBe(5);
    // Sent twice, under one key each time: the receiver drops the second by key.
    expect(sender.delivered.sort()).toEqual(sentByChild().sort());
    const stats = await store.stats(clock.now());
    expect(stats).toMatchObject({ pending: 0, claimed: 0, delivered: 5, dead: 0 });
  });
});
