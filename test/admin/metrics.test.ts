/**
 * `GET /metrics` after real drains over a real database: the text Prometheus's own `promtool`
 * accepts, counters by kind that purge never lowers, and the drains' run histogram and failures
 * by code, one of them a database fault injected into a real drain.
 */
import { spawn } from 'node:child_process';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { PermanentDeliveryError, RetryableDeliveryError } from '../../src/core/errors.js';
import { purgeOnce } from '../../src/core/purge.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createDrainer } from '../../src/runtime/drainer.js';
import { useTestDatabase } from '../support/database.js';
import { DEBIAN_INSTALL_TIMEOUT_MS, ensureDebianPackage } from '../support/debian-package.js';
import { failDeliveries } from '../support/destination-fixtures.js';
import { fakeClock } from '../support/drain-fixtures.js';
import { ADMIN_TOKEN, KIND, mountAdmin, OTHER_KIND, outbox } from './admin-harness.js';

const database = useTestDatabase();
const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
const DAY_MS = 24 * 60 * 60 * 1000;

/** Prometheus's own checker: Debian's prometheus package holds it. */
const PROMTOOL = { path: '/usr/bin/promtool', packageName: 'prometheus' };
let promtoolReady: true | string = 'not looked for yet';

beforeAll(async () => {
  promtoolReady = await ensureDebianPackage(PROMTOOL);
}, DEBIAN_INSTALL_TIMEOUT_MS);

/** `promtool check metrics` on `text`: its exit code and what it printed. */
function promtoolCheck(text: string): Promise<{ code: number | null; output: string }> {
  if (promtoolReady !== true) return Promise.reject(new Error(promtoolReady));
  return new Promise((resolve, reject) => {
    const child = spawn(PROMTOOL.path, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => reject(new Error(`promtool could not start: ${error}`)));
    child.on('close', (code) => resolve({ code, output }));
    child.stdin.end(text);
  });
}

/** The value of one sample (name with its labels, exactly as written), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((each) => each.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function scrape(app: ReturnType<typeof mountAdmin>): Promise<string> {
  const response = await app.request('/admin/metrics', { headers: auth });
  expect(response.status).toBe(200);
  return response.text();
}

/** Truncates what the tests of this file leave, so each starts from an empty outbox. */
async function emptyOutbox(): Promise<void> {
  await database.pool.query(
    'TRUNCATE outbox.messages, outbox.delivered_groups, outbox.delivery_counts, outbox.outcome_totals, outbox.drain_runs, outbox.destinations',
  );
}

describe('/metrics', () => {
  it('is clean under promtool check metrics after real drains with delivered, retried and dead messages', async () => {
    await emptyOutbox();
    const clock = fakeClock();
    const db = pgExecutor(database.pool);
    const keys = await outbox.enqueue(db, [
      { kind: KIND, payload: { n: 'delivered' } },
      { kind: KIND, payload: { n: 'retried, then delivered' } },
      { kind: KIND, payload: { n: 'dead' } },
      { kind: OTHER_KIND, payload: { n: 'delivered' } },
    ]);
    const failedOnce = new Set<string>();
    const send = async (message: { key: string }) => {
      if (message.key === keys[2]) throw new PermanentDeliveryError('410 Gone');
      if (message.key === keys[1] && !failedOnce.has(message.key)) {
        failedOnce.add(message.key);
        throw new RetryableDeliveryError('503 Service Unavailable');
      }
    };
    const drain = createDrainer({
      store: outbox.store(db),
      senders: { [KIND]: send, [OTHER_KIND]: send },
      clock,
      backoff: { baseMs: 1_000, capMs: 1_000 },
    });
    expect(await drain({})).toMatchObject({ delivered: 2, retried: 1, dead: 1 });
    clock.advance(2_000);
    expect(await drain({})).toMatchObject({ delivered: 1 });

    const text = await scrape(mountAdmin(database, { clock }));
    const checked = await promtoolCheck(text);
    expect(checked).toEqual({ code: 0, output: '' });
    expect(sample(text, `outbox_messages_delivered_total{kind="${KIND}"}`)).toBe(2);
    expect(sample(text, `outbox_messages_delivered_total{kind="${OTHER_KIND}"}`)).toBe(1);
    expect(sample(text, `outbox_attempts_failed_total{kind="${KIND}"}`)).toBe(2);
    expect(sample(text, `outbox_messages_dead_total{kind="${KIND}"}`)).toBe(1);
    expect(sample(text, `outbox_messages_dead_total{kind="${OTHER_KIND}"}`)).toBe(0);
    expect(sample(text, 'outbox_drain_duration_seconds_count')).toBe(2);
    // The rolling-hour gauges are gone: increase() over the counters says the same.
    expect(text).not.toMatch(/_last_hour/);
  });

  it('counters do not drop when purge deletes the minutes they were counted in', async () => {
    await emptyOutbox();
    const clock = fakeClock();
    const db = pgExecutor(database.pool);
    const store = outbox.store(db);
    const send = async (message: { payload: unknown }) => {
      if ((message.payload as { dead?: boolean }).dead) throw new PermanentDeliveryError('no');
    };
    const drain = createDrainer({ store, senders: { [KIND]: send }, clock });
    await outbox.enqueue(db, [
      { kind: KIND, payload: {} },
      { kind: KIND, payload: { dead: true } },
    ]);
    await drain({});
    const app = mountAdmin(database, { clock });
    const before = await scrape(app);
    expect(sample(before, `outbox_messages_delivered_total{kind="${KIND}"}`)).toBe(1);

    // Eight days on: purge deletes the minutes (its default keeps seven days of them) and the
    // delivered and dead rows.
    clock.advance(8 * DAY_MS);
    await purgeOnce({ store, clock });
    const { rows } = await database.pool.query(
      'SELECT count(*)::int AS n FROM outbox.delivery_counts',
    );
    expect(rows[0].n).toBe(0);
    const after = await scrape(app);
    for (const series of [
      `outbox_messages_delivered_total{kind="${KIND}"}`,
      `outbox_attempts_failed_total{kind="${KIND}"}`,
      `outbox_messages_dead_total{kind="${KIND}"}`,
    ]) {
      expect({ series, value: sample(after, series) }).toEqual({
        series,
        value: sample(before, series),
      });
    }

    // New outcomes add to what purge folded in.
    await outbox.enqueue(db, { kind: KIND, payload: {} });
    await drain({});
    await purgeOnce({ store, clock });
    expect(sample(await scrape(app), `outbox_messages_delivered_total{kind="${KIND}"}`)).toBe(2);
  });

  it('counts drain runs in the duration histogram and a drain failing on a database fault under its code', async () => {
    await emptyOutbox();
    const db = pgExecutor(database.pool);
    // The drains' own pool gives up on a lock after 200 ms: a lock another session holds on
    // messages makes their claim fail with lock_not_available (55P03), a real database error.
    const drainPool = new pg.Pool({
      connectionString: database.url,
      options: '-c lock_timeout=200',
    });
    const locker = await database.pool.connect();
    try {
      const drain = createDrainer({
        store: outbox.store(pgExecutor(drainPool)),
        senders: { [KIND]: async () => {} },
      });
      await outbox.enqueue(db, [{ kind: KIND, payload: {} }]);
      expect(await drain({})).toMatchObject({ delivered: 1 });
      expect(await drain({})).toMatchObject({ delivered: 0 });

      await locker.query('BEGIN');
      await locker.query('LOCK TABLE outbox.messages IN ACCESS EXCLUSIVE MODE');
      await expect(drain({})).rejects.toMatchObject({ code: '55P03' });
      await locker.query('ROLLBACK');

      const text = await scrape(mountAdmin(database));
      expect(await promtoolCheck(text)).toEqual({ code: 0, output: '' });
      expect(sample(text, 'outbox_drain_duration_seconds_count')).toBe(3);
      expect(sample(text, 'outbox_drain_duration_seconds_bucket{le="+Inf"}')).toBe(3);
      expect(sample(text, 'outbox_drain_errors_total{code="55P03"}')).toBe(1);
      // The failed run waited out the lock: at least 0.2 s, so not in the buckets below it.
      expect(sample(text, 'outbox_drain_duration_seconds_bucket{le="0.1"}')).toBeLessThanOrEqual(2);
      expect(sample(text, 'outbox_drain_duration_seconds_sum')).toBeGreaterThanOrEqual(0.2);
      const buckets = [
        ...text.matchAll(/^outbox_drain_duration_seconds_bucket\{le="[^"]+"\} (\d+)$/gm),
      ];
      const counts = buckets.map((match) => Number(match[1]));
      expect(counts).toEqual([...counts].sort((a, b) => a - b));
      expect(sample(text, 'outbox_drain_last_ended_timestamp_seconds')).toBeGreaterThan(0);
    } finally {
      await locker.query('ROLLBACK').catch(() => {});
      locker.release();
      await drainPool.end();
    }
  });

  it('leaves a kick out of the histogram', async () => {
    await emptyOutbox();
    const db = pgExecutor(database.pool);
    const drain = createDrainer({ store: outbox.store(db), senders: { [KIND]: async () => {} } });
    const keys = await outbox.enqueue(db, [{ kind: KIND, payload: {} }]);
    expect(await drain({ keys, budgetMs: 5_000 })).toMatchObject({ delivered: 1 });
    const text = await scrape(mountAdmin(database));
    expect(sample(text, 'outbox_drain_duration_seconds_count')).toBe(0);
    expect(sample(text, `outbox_messages_delivered_total{kind="${KIND}"}`)).toBe(1);
  });

  it('reports each destination with a record as paused (open or half-open) or not, names escaped, clean under promtool', async () => {
    await emptyOutbox();
    const clock = fakeClock();
    const db = pgExecutor(database.pool);
    const destinations = outbox.store(db).destinations();
    await failDeliveries(db, 'https://down.example', 5, { clock });
    await failDeliveries(db, 'https://up.example', 2, { clock });
    await destinations.pause(
      'https://half-open.example',
      clock.now(),
      new Date(clock.now().getTime() + 1_000),
    );
    const hostile = 'https://evil.example/"} 1\nfake_metric 7\n\\';
    await destinations.pause(hostile, clock.now());
    clock.advance(2_000);
    const text = await scrape(mountAdmin(database, { clock }));
    expect(await promtoolCheck(text)).toEqual({ code: 0, output: '' });
    const lines = text.split('\n').filter((line) => line.includes('outbox_destination_paused'));
    expect(lines).toEqual([
      expect.stringMatching(
        /^# HELP outbox_destination_paused 1 while drains pass over .* at most 1000, paused ones first\.$/,
      ),
      '# TYPE outbox_destination_paused gauge',
      'outbox_destination_paused{destination="https://down.example"} 1',
      `outbox_destination_paused{destination="https://evil.example/\\"} 1\\nfake_metric 7\\n\\\\"} 1`,
      'outbox_destination_paused{destination="https://half-open.example"} 1',
      'outbox_destination_paused{destination="https://up.example"} 0',
    ]);
    expect(text).not.toMatch(/^fake_metric/m);
  });

  it('reports at most 1000 destinations, every paused one among them', async () => {
    await emptyOutbox();
    await database.pool.query(
      `INSERT INTO outbox.destinations (destination, failures, updated_at)
       SELECT 'https://closed-' || lpad(n::text, 4, '0') || '.example', 1, now()
       FROM generate_series(1, 1005) n`,
    );
    const destinations = outbox.store(pgExecutor(database.pool)).destinations();
    const now = new Date();
    await destinations.pause('https://zz-paused.example', now);
    await destinations.pause('https://closed-1005.example', now);
    const text = await scrape(mountAdmin(database));
    const samples = text
      .split('\n')
      .filter((line) => line.startsWith('outbox_destination_paused{'));
    expect(samples).toHaveLength(1000);
    expect(samples.slice(0, 3)).toEqual([
      'outbox_destination_paused{destination="https://closed-1005.example"} 1',
      'outbox_destination_paused{destination="https://zz-paused.example"} 1',
      'outbox_destination_paused{destination="https://closed-0001.example"} 0',
    ]);
    expect(samples.at(-1)).toBe(
      'outbox_destination_paused{destination="https://closed-0998.example"} 0',
    );
  });
});
