/**
 * The shape of every in-process fault scenario: an app writing messages in its own
 * transactions (half rolled back on purpose), drains running one after another, faults injected
 * at random moments, then a drain with a clock past every lease to finish. The outcome is read
 * from the receivers and the table: what was committed, what went out, and how often.
 */
import { randomUUID } from 'node:crypto';
import { Pool as NeonPool, neon, neonConfig } from '@neondatabase/serverless';
import pg from 'pg';
import postgres from 'postgres';
import { drainOnce } from '../../../src/core/drain.js';
import { isOutboxError } from '../../../src/core/errors.js';
import type { NewMessage } from '../../../src/core/message.js';
import type { SqlExecutor } from '../../../src/core/ports.js';
import type { Sender } from '../../../src/core/sender.js';
import { applyNeonLocalConfig } from '../../../src/dev/neon-proxy.js';
import { neonHttpExecutor, neonHttpQuery } from '../../../src/drivers/neon-http.js';
import { neonWsExecutor } from '../../../src/drivers/neon-ws.js';
import { pgExecutor } from '../../../src/drivers/node-pg.js';
import { isRetryableDatabaseError } from '../../../src/drivers/postgres-errors.js';
import { postgresJsExecutor } from '../../../src/drivers/postgres-js.js';
import type { Outbox } from '../../../src/outbox.js';
import { fakeClock } from '../../support/drain-fixtures.js';
import type { DriverName } from '../../support/drivers.js';
import { loopbackWebhookSender } from '../../support/webhook-receiver.js';
import { type Accounting, account, type DeliveryLedger } from './delivery-ledger.js';

/** A driver as the scenario uses it: drains through `db`, the app writes through `write`. */
export interface FaultDriver {
  db: SqlExecutor;
  /** One transaction: a domain row and `messages`; with `rollBack`, it fails before COMMIT. */
  write(outbox: Outbox, messages: NewMessage[], rollBack: boolean): Promise<void>;
  close(): Promise<void>;
}

/**
 * Opens a driver whose pools survive their connections being killed: an idle connection that
 * dies emits 'error' on the pool, which would crash the process with no listener.
 */
export function openFaultDriver(
  name: DriverName,
  url: string,
  proxyPort: number,
  domainTable: string,
): FaultDriver {
  const domain = `INSERT INTO ${domainTable} (note) VALUES ($1)`;
  if (name === 'neon-http') {
    applyNeonLocalConfig(neonConfig, { port: proxyPort });
    const sql = neon(url);
    return {
      db: neonHttpExecutor(sql),
      async write(outbox, messages, rollBack) {
        const write = outbox.enqueueStatement(messages);
        await sql.transaction([
          sql.query(domain, ['order']),
          neonHttpQuery(sql, write.statement),
          ...(rollBack ? [sql.query('SELECT 1 / 0')] : []),
        ] as never);
      },
      close: async () => {},
    };
  }
  if (name === 'postgres-js') {
    const sql = postgres(url, { max: 6, onnotice: () => {} });
    return {
      db: postgresJsExecutor(sql),
      async write(outbox, messages, rollBack) {
        await sql.begin(async (tx) => {
          await tx.unsafe(domain, ['order']);
          await outbox.enqueue(postgresJsExecutor(tx), messages);
          if (rollBack) await tx.unsafe('SELECT 1 / 0');
        });
      },
      close: () => sql.end({ timeout: 5 }),
    };
  }
  if (name === 'neon-ws') applyNeonLocalConfig(neonConfig, { port: proxyPort });
  // The Neon Pool is node-postgres' Pool on the outside: use both through that shape.
  const pool = (
    name === 'neon-ws'
      ? new NeonPool({ connectionString: url, max: 6 })
      : new pg.Pool({ connectionString: url, max: 6 })
  ) as pg.Pool;
  pool.on('error', () => {});
  // pg-pool's query() listens for a client error only once: a backend killed mid-query can
  // emit a second one after the query failed, which would be uncaught. A client-level listener
  // (what an app under such faults needs too) keeps it from taking the process down.
  pool.on('connect', (client) => client.on('error', () => {}));
  const wrap = name === 'neon-ws' ? neonWsExecutor : pgExecutor;
  return {
    db: wrap(pool),
    async write(outbox, messages, rollBack) {
      // No 'error' listener here: the pool's 'connect' one covers every client, and one added
      // per checkout would pile up on a reused client (Node's warning at 11).
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        await client.query(domain, ['order']);
        await outbox.enqueue(wrap(client), messages);
        if (rollBack) await client.query('SELECT 1 / 0');
        await client.query('COMMIT');
      } catch (error) {
        // A client whose ROLLBACK goes through is fine to reuse (a deliberate rollback, a
        // refused message); one whose ROLLBACK fails lost its connection and is dropped. Dropped
        // after every failure, each rolled-back write opened a connection of its own.
        broken = await client.query('ROLLBACK').then(
          () => undefined,
          (rollbackError: Error) => rollbackError,
        );
        throw error;
      } finally {
        client.release(broken);
      }
    },
    close: () => pool.end(),
  };
}

export interface FaultRunOptions {
  outbox: Outbox;
  driver: FaultDriver;
  ledger: DeliveryLedger;
  secret: string;
  /**
   * How long the app writes and the drains run under faults; longer (up to 5 times) until at
   * least 3 of the app's writes have committed.
   */
  durationMs: number;
  /** Injects one fault; called at random moments. Returns what it did (for the count). */
  inject: () => Promise<unknown>;
  /** Turns lasting faults off before the finishing drain. */
  stopFaults?: () => void;
  /** Mean ms between faults. */
  faultEveryMs: number;
  random: () => number;
  /** Sends per message-writing request, and concurrent drains. */
  messagesPerWrite?: number;
  drains?: number;
  /** A lease short enough that rows stranded by a fault come back within the run. */
  leaseMs?: number;
}

export interface FaultRunResult extends Accounting {
  committed: string[];
  rolledBack: string[];
  faults: number;
  drainRuns: number;
  /** Errors drains threw, by description; every one typed (see `untyped`). */
  drainErrors: number;
  /** Errors that were neither an OutboxError nor a retryable database error. */
  untyped: unknown[];
  /** Settles that failed every try: their sent messages go out again after the lease. */
  settlesAbandoned: number;
  /** Keys whose send was cut by its timeout (the receiver may have taken it anyway). */
  timedOut: Set<string>;
  /** Delivered rows, and deliveries the outbox's own counters recorded. */
  deliveredRows: number;
  countedDeliveries: number;
}

/** Writes that must commit before a run under faults ends, however long past its duration. */
const MIN_COMMITTED_WRITES = 3;

/** The longest a run goes on waiting for {@link MIN_COMMITTED_WRITES}: this many durations. */
const MAX_RUN_FACTOR = 5;

/** Runs the app, the drains and the faults together, then finishes and accounts. */
export async function runWithFaults(options: FaultRunOptions): Promise<FaultRunResult> {
  const { outbox, driver, ledger, random } = options;
  // Sends get a quarter of the lease: 2.5 s, so a loaded CI machine does not time them out.
  const leaseMs = options.leaseMs ?? 10_000;
  /** Keys of sends cut by their timeout: the receiver may have taken them anyway. */
  const timedOut = new Set<string>();
  const sender = (agent: string): Sender => {
    const webhook = loopbackWebhookSender(ledger.port, {
      secret: options.secret,
      userAgent: agent,
    });
    return async (message, signal, context) => {
      try {
        await webhook(message, signal, context);
      } finally {
        if (signal.aborted) timedOut.add(message.key);
      }
    };
  };
  const attempted: string[] = [];
  const rolledBack: string[] = [];
  const untyped: unknown[] = [];
  let faults = 0;
  let drainRuns = 0;
  let drainErrors = 0;
  let settlesAbandoned = 0;
  let committedWrites = 0;
  const startedAt = Date.now();
  const endsAt = startedAt + options.durationMs;
  // A run that committed nothing shows nothing: on a loaded machine a driver whose connections
  // open slowly (Neon WebSocket through the proxy) can see every transaction of the window cut
  // by a fault. The faults then go on until a few writes have committed, within a bound.
  const lastEnd = startedAt + options.durationMs * MAX_RUN_FACTOR;
  const running = () =>
    Date.now() < endsAt || (committedWrites < MIN_COMMITTED_WRITES && Date.now() < lastEnd);
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  const app = async () => {
    while (running()) {
      const rollBack = random() < 0.5;
      const messages = Array.from({ length: options.messagesPerWrite ?? 4 }, () => ({
        key: randomUUID(),
        kind: 'webhook',
        payload: { url: `${ledger.url}/app`, body: { rollBack } },
      }));
      (rollBack ? rolledBack : attempted).push(...messages.map((message) => message.key));
      // A failure is the app's to see; whether it committed is read from the table at the end
      // (a COMMIT whose reply was lost may have), and a write that returned did commit.
      const wrote = await driver.write(outbox, messages, rollBack).then(
        () => true,
        () => false,
      );
      if (wrote && !rollBack) committedWrites += 1;
      await pause(5);
    }
  };
  const drainLoop = async (index: number) => {
    const store = outbox.store(driver.db);
    const senders = { webhook: sender(`drain-${index}`) };
    while (running()) {
      drainRuns += 1;
      try {
        await drainOnce({
          store,
          senders,
          leaseMs,
          sendTimeoutMs: leaseMs / 4,
          roundTripReserveMs: leaseMs / 8,
          batchSize: 10,
        });
      } catch (error) {
        drainErrors += 1;
        const typed =
          (isOutboxError(error) && error.code === 'OUTBOX_DATABASE') ||
          isRetryableDatabaseError(error);
        if (!typed) {
          untyped.push(error);
          console.error(
            'untyped drain error',
            error,
            Object.getPrototypeOf(error)?.constructor?.name,
            (error as { cause?: unknown })?.cause,
          );
        }
        if (isOutboxError(error) && /could not record the outcomes/.test(error.message)) {
          settlesAbandoned += 1;
        }
      }
      await pause(10);
    }
  };
  const injector = async () => {
    while (running()) {
      await pause(random() * 2 * options.faultEveryMs);
      if (!running()) break;
      await options.inject();
      faults += 1;
    }
  };
  await Promise.all([
    app(),
    injector(),
    ...Array.from({ length: options.drains ?? 2 }, (_, index) => drainLoop(index)),
  ]);

  // Finish: a clock past every lease takes what the faults left claimed.
  options.stopFaults?.();
  const clock = fakeClock(new Date(Date.now() + leaseMs + 1_000));
  const store = outbox.store(driver.db);
  for (let pass = 0, empty = false; pass < 20 && !empty; pass++) {
    try {
      const report = await drainOnce({ store, senders: { webhook: sender('recovery') }, clock });
      empty = report.claimed === 0;
    } catch (error) {
      // A fault still in flight (a restart finishing): the next pass carries on.
      await pause(200);
      if (pass === 19) throw error;
    }
  }
  const schema = outbox.schema;
  const { rows } = await driver.db.query(
    `SELECT key::text AS key, state FROM ${schema}.all_messages`,
  );
  const committed = rows.map((row) => String(row.key));
  const undelivered = rows.filter((row) => row.state !== 'delivered');
  if (undelivered.length > 0) {
    throw new Error(
      `${undelivered.length} messages not delivered: ${JSON.stringify(undelivered.slice(0, 3))}`,
    );
  }
  const counts = await store.deliveryCounts(new Date(0));
  const keys = new Set([...attempted, ...rolledBack]);
  const result = account(
    ledger.deliveries.filter((delivery) => keys.has(delivery.key)),
    committed,
    rolledBack,
  );
  return {
    ...result,
    committed,
    rolledBack,
    faults,
    drainRuns,
    drainErrors,
    untyped,
    settlesAbandoned,
    timedOut,
    deliveredRows: rows.length,
    countedDeliveries: counts.reduce((sum, count) => sum + count.delivered, 0),
  };
}
