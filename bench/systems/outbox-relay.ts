/**
 * outbox-relay itself, driven through its public pieces: `createOutbox().enqueue`, `drainOnce`
 * over `pgExecutor(pool)`, `purgeOnce`, and the store's one-statement claim.
 */
import { randomUUID } from 'node:crypto';
import * as api from '@opentelemetry/api';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type pg from 'pg';
import { drainOnce } from '../../src/core/drain.js';
import { DEFAULT_CONCURRENCY, DEFAULT_LEASE_MS } from '../../src/core/drain-settings.js';
import type { ClaimRequest } from '../../src/core/outbox-store.js';
import type { SqlExecutor } from '../../src/core/ports.js';
import { purgeOnce } from '../../src/core/purge.js';
import { pgExecutor } from '../../src/drivers/node-pg.js';
import { createOutbox, type Outbox, type OutboxOptions } from '../../src/outbox.js';
import { dueClaimParameters } from '../../src/store/due-claim-shape.js';
import { insertHistoryGroups } from '../../src/store/history-groups.js';
import { quoteSchema } from '../../src/store/schema-name.js';
import { outboxStatements } from '../../src/store/statements.js';
import { drainTracer } from '../../src/tracing/opentelemetry.js';
import { ownVersion } from '../lib/machine.js';
import { benchPool } from '../lib/postgres.js';
import {
  benchPayload,
  type DrainRequest,
  type DrainResult,
  ENQUEUE_CHUNK,
  orderingKeyOf,
  type QueueHandle,
  type QueueSystem,
} from './types.js';

export const OUTBOX_SCHEMA = 'outbox';
/** A kind with no payload check, so enqueue cost is the outbox's own, not a validator's. */
export const BENCH_KIND = 'bench.event';

/**
 * Where every bench message goes: one receiver, as a webhook's origin names it. Every message
 * carries it, as a webhook does, so the figures include what destination health costs the happy
 * path (the column, the claim's pause check, the settle's sum per destination).
 */
export const BENCH_DESTINATION = 'https://receiver.bench.example';

/** The outbox every outbox-relay case uses. */
export function benchOutbox(options: Pick<OutboxOptions, 'keepDelivered'> = {}): Outbox {
  return createOutbox({
    schema: OUTBOX_SCHEMA,
    kinds: { [BENCH_KIND]: true },
    destinations: { [BENCH_KIND]: () => BENCH_DESTINATION },
    ...options,
  });
}

/**
 * `BENCH_TRACER=1`: every drain records its spans (docs/tracing.md) on OpenTelemetry's SDK with
 * no exporter, so the figures carry what making the spans costs and nothing of shipping them.
 */
const benchTracer =
  process.env.BENCH_TRACER === '1'
    ? drainTracer(api, new BasicTracerProvider().getTracer('outbox-relay-bench'))
    : undefined;

const quotedSchema = quoteSchema(OUTBOX_SCHEMA);
const messages = `${quotedSchema}.messages`;

export const outboxRelaySystem: QueueSystem = {
  id: 'outbox-relay',
  label: `outbox-relay ${ownVersion()}`,
  version: ownVersion(),
  settings: {
    driver: 'pg Pool (max 10) through pgExecutor',
    'prepared statements': 'on (pgExecutor default: a statement is prepared from its second run)',
    drain:
      'drainOnce({ batchSize, concurrency }) per case; other options at their defaults (claim ahead on, settle groups of 100 outcomes or 5 ms, lease 2 min, send timeout 15 s); with BENCH_TRACER=1 also tracer: drainTracer over an SDK tracer with no exporter',
    enqueue: 'outbox.enqueue(pgExecutor(pool), 1,000 messages): one INSERT per call',
    purge:
      'purgeOnce({ deliveredOlderThanMs: 0, deadOlderThanMs: 0 }), 1,000 rows per DELETE, over messages and delivered history',
  },
  async install(url) {
    const pool = benchPool(url, 2);
    try {
      await benchOutbox().migrate(pgExecutor(pool));
    } finally {
      await pool.end();
    }
  },
  async open(url) {
    const pool = benchPool(url, 10);
    return openOutboxHandle(pool, pgExecutor(pool));
  },
};

/**
 * outbox-relay with `keepDelivered: false`: a delivery deletes the row and writes no history.
 * Same id, so it shares outbox-relay's migrated template; scenario 1 measures it beside the
 * default to show what the history costs.
 */
export const outboxRelayNoHistorySystem: QueueSystem = {
  ...outboxRelaySystem,
  label: `${outboxRelaySystem.label} (keepDelivered: false)`,
  async open(url) {
    const pool = benchPool(url, 10);
    return openOutboxHandle(pool, pgExecutor(pool), { keepDelivered: false });
  },
};

/**
 * A handle over any executor, so a case can put a wrapper (added latency) between the drain
 * and the pool while setup and checks still go straight to the pool.
 */
export function openOutboxHandle(
  pool: pg.Pool,
  executor: SqlExecutor,
  options: Pick<OutboxOptions, 'keepDelivered'> = {},
): QueueHandle {
  const outbox = benchOutbox(options);
  const store = outbox.store(executor);
  const direct = pgExecutor(pool);
  return {
    async enqueue(count, options) {
      const keys = options?.orderingKeys;
      for (let start = 0; start < count; start += ENQUEUE_CHUNK) {
        const size = Math.min(ENQUEUE_CHUNK, count - start);
        await outbox.enqueue(
          direct,
          Array.from({ length: size }, (_, i) => ({
            kind: BENCH_KIND,
            payload: benchPayload(start + i),
            orderingKey: keys === undefined ? undefined : orderingKeyOf(start + i, keys),
          })),
        );
      }
    },

    async drain(request: DrainRequest): Promise<DrainResult> {
      const startedAt = performance.now();
      const report = await drainOnce({
        store,
        ...(benchTracer ? { tracer: benchTracer } : {}),
        senders: { [BENCH_KIND]: (message) => request.send(message.payload) },
        batchSize: request.batchSize,
        concurrency: request.concurrency,
        signal: AbortSignal.timeout(request.timeLimitMs),
      });
      return { delivered: report.delivered, elapsedMs: performance.now() - startedAt };
    },

    async unfinished() {
      const result = await pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM ${messages} WHERE state IN ('pending', 'claimed')`,
      );
      return Number(result.rows[0]!.n);
    },

    async claim(limit) {
      const { claimed } = await store.claim(claimRequest(limit));
      return claimed.length;
    },

    async insertHistory(rows) {
      // Delivered messages as a drain leaves them: moved to delivered history at settle in
      // groups (of 300 here), one attempt, older than anything pending (they were enqueued and
      // delivered before it).
      await pool.query(
        insertHistoryGroups(
          quotedSchema,
          `(SELECT -g AS id, gen_random_uuid() AS key, $2::text AS kind,
               jsonb_build_object('orderId', g, 'event', 'order.created',
                 'note', 'outbox-relay benchmark message') AS payload,
               NULL::text AS ordering_key, 1 AS attempts, 10 AS max_attempts,
               now() - interval '1 day' + g * interval '1 millisecond' AS due_at,
               NULL::text AS last_error,
               now() - interval '1 day' + g * interval '1 millisecond' AS created_at,
               now() - interval '1 day' + (g / 300) * interval '300 milliseconds'
                 + interval '50 milliseconds' AS delivered_at
             FROM generate_series(1, $1::integer) AS g) history`,
          'delivered_at',
        ),
        [rows, BENCH_KIND],
      );
    },

    async purge() {
      await purgeOnce({
        store,
        deliveredOlderThanMs: 0,
        deadOlderThanMs: 0,
        limit: Number.POSITIVE_INFINITY,
        // delivered_at < now is strict: look one second ahead so rows settled this very
        // millisecond go too.
        clock: { now: () => new Date(Date.now() + 1000) },
      });
    },

    async tables() {
      return [`${OUTBOX_SCHEMA}.messages`, `${OUTBOX_SCHEMA}.delivered_groups`];
    },

    close: () => pool.end(),
  };
}

/** A claim exactly as drainOnce makes it, for `limit` rows. */
export function claimRequest(limit: number): ClaimRequest {
  return {
    now: new Date(),
    claimToken: randomUUID(),
    limit,
    leaseMs: DEFAULT_LEASE_MS,
    deadHeadBlocks: true,
    kinds: [BENCH_KIND],
  };
}

/**
 * The claim statement's plan, executed for real (EXPLAIN ANALYZE) inside a transaction that is
 * rolled back, with the same parameters drainOnce passes.
 */
export async function explainClaim(pool: pg.Pool, limit: number): Promise<string> {
  const request = claimRequest(limit);
  const shape = {
    limit: request.limit,
    share: Math.ceil(request.limit / DEFAULT_CONCURRENCY),
    after: false,
  };
  const statement = outboxStatements(quotedSchema).claimDueMessages(shape);
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, SUMMARY OFF) ${statement}`,
      dueClaimParameters(
        request,
        [request.now, request.claimToken, request.leaseMs, request.deadHeadBlocks, request.kinds],
        shape,
      ),
    );
    return result.rows.map((row) => row['QUERY PLAN']).join('\n');
  } finally {
    await client.query('ROLLBACK').catch(() => {});
    client.release();
  }
}
