import { setTimeout as sleep } from 'node:timers/promises';
import { type DrainOptions, type DrainReport, drainOnce } from '../../core/drain.js';
import { isOutboxError } from '../../core/errors.js';
import type { Logger } from '../../core/ports.js';
import { isRetryableDatabaseError } from '../../drivers/postgres-errors.js';
import { budgetedTimeouts } from '../../runtime/drainer.js';
import { sendersFromEnv } from '../../runtime/senders-from-env.js';
import { nodeHostResolver } from '../../senders/webhook/node-host-resolver.js';
import { decodeWebhookSecret } from '../../senders/webhook/webhook-signature.js';
import type { PostgresOutboxStore } from '../../store/postgres-store.js';
import type { DrainArguments } from '../arguments.js';
import { CliError, describeFailure, ExitCode, isConnectionError } from '../cli-errors.js';
import { type CliIo, isDebug, writeJson, writeLine, writeNote } from '../cli-io.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { count, formatDuration, formatTime } from '../text-format.js';

/** The report fields a continuous drain adds up across ticks. */
const TOTALLED = ['claimed', 'delivered', 'retried', 'dead', 'released', 'stale', 'sends'] as const;

type Totals = Record<(typeof TOTALLED)[number], number>;

/**
 * `outbox drain`: runs `drainOnce` with senders built from the environment, the way the deployed
 * functions do. With `--once`, one drain and its report. Otherwise a drain per tick, resting
 * `--interval` after a tick that left nothing due, until `io.signal` aborts: the drain in
 * flight then finishes its sends and records every outcome, and the command exits 0.
 */
export async function runDrain(args: DrainArguments, io: CliIo): Promise<ExitCode> {
  const outbox = outboxFromEnv(io.env);
  return withDatabase(io, outbox, async ({ store }) => {
    const logger = cliLogger(io);
    const { senders, skipped } = sendersFromEnv(io.env, { resolveHost: nodeHostResolver });
    for (const { kind, reason } of skipped) writeNote(io, `not draining ${kind}: ${reason}`);
    checkWebhookSecret(io);
    const options: DrainOptions = {
      store,
      senders,
      batchSize: args.batchSize,
      concurrency: args.concurrency,
      signal: io.signal,
      logger,
    };
    if (args.once) {
      const report = await drainOnce({ ...options, ...budgetFor(args.budgetMs) });
      if (args.json) writeJson(io.stdout, report);
      else writeLine(io.stdout, describeReport(report));
      return ExitCode.ok;
    }
    return drainContinuously(args, io, options, store);
  });
}

async function drainContinuously(
  args: DrainArguments,
  io: CliIo,
  options: DrainOptions,
  store: PostgresOutboxStore,
): Promise<ExitCode> {
  const kinds = Object.keys(options.senders).join(', ');
  writeNote(
    io,
    `draining ${kinds}, resting ${formatDuration(args.intervalMs)} when idle; Ctrl-C to stop`,
  );
  const startedAt = Date.now();
  const totals: Totals = {
    claimed: 0,
    delivered: 0,
    retried: 0,
    dead: 0,
    released: 0,
    stale: 0,
    sends: 0,
  };
  let ticks = 0;
  let failedTicks = 0;
  while (!io.signal?.aborted) {
    ticks += 1;
    let rest = true;
    try {
      const report = await drainOnce({ ...options, ...budgetFor(args.budgetMs) });
      for (const field of TOTALLED) totals[field] += report[field];
      // A tick cut short by its deadline or budget left work due: go again without resting.
      rest = report.stopReason === 'empty' || report.stopReason === 'aborted';
      const { lagMs } = await store.stats(new Date());
      if (args.json) {
        writeJson(io.stdout, { type: 'tick', tick: ticks, ...report, lagMs });
      } else {
        writeLine(io.stdout, `${formatTime(new Date())} tick ${ticks}: ${tickLine(report, lagMs)}`);
      }
    } catch (error) {
      // A database blip (Neon suspending, a failover, a deadlock) must not end a long-running
      // drain. Anything else will not fix itself by waiting: it stops the command.
      if (!isTransientDatabaseFailure(error)) throw error;
      failedTicks += 1;
      writeNote(
        io,
        `tick ${ticks} failed: ${describeFailure(error).message}; trying again in ${formatDuration(args.intervalMs)}`,
      );
    }
    if (rest) await pause(args.intervalMs, io.signal);
  }
  const durationMs = Date.now() - startedAt;
  if (args.json) {
    writeJson(io.stdout, { type: 'summary', ticks, failedTicks, ...totals, durationMs });
  } else {
    const failed = failedTicks === 0 ? '' : ` (${failedTicks} failed)`;
    writeLine(
      io.stdout,
      `stopped after ${count(ticks, 'tick')}${failed} in ${formatDuration(durationMs)}: ${outcomes(totals)}`,
    );
  }
  return ExitCode.ok;
}

/**
 * Lost or refused connections, retryable SQLSTATEs, and a drain that could not record its
 * outcomes (its rows keep their lease; a later tick takes them).
 */
function isTransientDatabaseFailure(error: unknown): boolean {
  return (
    isConnectionError(error) ||
    isRetryableDatabaseError(error) ||
    (isOutboxError(error) && error.code === 'OUTBOX_DATABASE')
  );
}

/** A deadline with send and round-trip timeouts scaled to fit it; no budget, no deadline. */
function budgetFor(budgetMs: number | undefined): Partial<DrainOptions> {
  return budgetMs === undefined ? {} : budgetedTimeouts(budgetMs);
}

/**
 * The webhook sender reads OUTBOX_WEBHOOK_SECRET only when it signs, and a missing or malformed
 * secret is a permanent failure there: every such webhook would go to dead letter. Say so at
 * startup instead: refuse a malformed secret, warn about a missing one.
 */
function checkWebhookSecret(io: CliIo): void {
  const secret = io.env.OUTBOX_WEBHOOK_SECRET?.trim();
  if (!secret) {
    writeNote(
      io,
      'OUTBOX_WEBHOOK_SECRET is not set: webhooks whose payload names no endpointId cannot be signed and will go to dead letter',
    );
    return;
  }
  try {
    decodeWebhookSecret(secret);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new CliError('CLI_CONFIGURATION', `OUTBOX_WEBHOOK_SECRET: ${reason}`);
  }
}

/** Resolves after `ms`, or as soon as `signal` aborts. */
async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  await sleep(ms, undefined, { signal }).catch(() => {});
}

function outcomes(
  counts: Pick<DrainReport, 'delivered' | 'retried' | 'dead' | 'released' | 'stale'>,
): string {
  const parts = [
    `delivered ${counts.delivered}`,
    `retried ${counts.retried}`,
    `dead ${counts.dead}`,
    `released ${counts.released}`,
  ];
  // Stale settles are rare (another drain re-claimed after a lease expired): show them only then.
  if (counts.stale > 0) parts.push(`stale ${counts.stale}`);
  return parts.join(', ');
}

function describeReport(report: DrainReport): string {
  return `${outcomes(report)} in ${formatDuration(report.durationMs)} (${count(report.batches, 'batch', 'batches')}, stopped: ${report.stopReason})`;
}

function tickLine(report: DrainReport, lagMs: number): string {
  return `${outcomes(report)}, lag ${formatDuration(lagMs)}`;
}

/**
 * The drain's log on stderr: warnings and errors always (stale settles, messages set aside at
 * claim), info and debug with OUTBOX_DEBUG=1.
 */
function cliLogger(io: CliIo): Logger {
  const debug = isDebug(io);
  const write = (level: string, message: string, fields?: Record<string, unknown>) => {
    const details = fields === undefined ? '' : ` ${JSON.stringify(fields)}`;
    writeNote(io, `${level}: ${message}${details}`);
  };
  return {
    debug: (message, fields) => {
      if (debug) write('debug', message, fields);
    },
    info: (message, fields) => {
      if (debug) write('info', message, fields);
    },
    warn: (message, fields) => write('warn', message, fields),
    error: (message, fields) => write('error', message, fields),
  };
}
