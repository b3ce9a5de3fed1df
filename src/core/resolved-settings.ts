/**
 * A drain's options resolved: every default filled in, every value checked, and the checks that
 * refuse a combination under which a lease could run out mid-send.
 */
import {
  type DestinationChange,
  type DestinationHealthPolicy,
  destinationHealthPolicy,
} from './destination-health.js';
import {
  DEFAULT_BATCH_SIZE,
  DEFAULT_CONCURRENCY,
  DEFAULT_LEASE_MS,
  DEFAULT_PREFETCH,
  DEFAULT_ROUND_TRIP_RESERVE_MS,
  DEFAULT_SEND_TIMEOUT_MS,
  DEFAULT_SETTLE_GROUP_MS,
  DEFAULT_SETTLE_GROUP_SIZE,
  type DrainOptions,
  MAX_BATCH_SIZE,
  MAX_CONCURRENCY,
  MIN_BUDGET_TO_RECORD_RUN,
} from './drain-settings.js';
import { ConfigurationError } from './errors.js';
import type { OutboxStore } from './outbox-store.js';
import {
  type Clock,
  type IdGenerator,
  type Logger,
  randomId,
  silentLogger,
  systemClock,
} from './ports.js';
import { type BackoffOptions, validateBackoff } from './retry-policy.js';
import type { SenderRegistry } from './sender.js';

/** A drain's options with every default filled in and every value checked. */
export interface Settings {
  store: OutboxStore;
  prefetch: boolean;
  settleGroupSize: number;
  settleGroupMs: number;
  senders: SenderRegistry;
  kinds: string[];
  maxMessages: number;
  subrequestBudget: number;
  batchSize: number;
  concurrency: number;
  leaseMs: number;
  sendTimeoutMs: number;
  roundTripReserveMs: number;
  /** The fewest rows one send request takes among the senders (see rowsPerSend). */
  rowsPerSend: number;
  backoff: BackoffOptions;
  deadHeadBlocks: boolean;
  /** The run records itself at its end (see `DrainOptions.recordRun`). */
  recordRun: boolean;
  clock: Clock;
  newId: IdGenerator;
  random: () => number;
  logger: Logger;
  destinationHealth: DestinationHealthPolicy | false;
  onDestinationChange: ((change: DestinationChange) => void | Promise<void>) | undefined;
}

export function resolveSettings(options: DrainOptions): Settings {
  const kinds = Object.keys(options.senders);
  if (kinds.length === 0)
    throw new ConfigurationError('drainOnce: senders must name one kind or more');
  const settings: Settings = {
    rowsPerSend: rowsPerSend(options.senders),
    store: options.store,
    prefetch: options.prefetch ?? DEFAULT_PREFETCH,
    settleGroupSize: options.settleGroupSize ?? DEFAULT_SETTLE_GROUP_SIZE,
    settleGroupMs: options.settleGroupMs ?? DEFAULT_SETTLE_GROUP_MS,
    senders: options.senders,
    kinds,
    maxMessages: options.maxMessages ?? Number.POSITIVE_INFINITY,
    subrequestBudget: options.subrequestBudget ?? Number.POSITIVE_INFINITY,
    batchSize: options.batchSize ?? DEFAULT_BATCH_SIZE,
    concurrency: options.concurrency ?? DEFAULT_CONCURRENCY,
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
    sendTimeoutMs: options.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS,
    roundTripReserveMs: options.roundTripReserveMs ?? DEFAULT_ROUND_TRIP_RESERVE_MS,
    backoff: options.backoff ?? {},
    deadHeadBlocks: options.deadHeadBlocks ?? true,
    recordRun: false,
    clock: options.clock ?? systemClock,
    newId: options.newId ?? randomId,
    random: options.random ?? Math.random,
    logger: options.logger ?? silentLogger,
    destinationHealth: destinationHealthPolicy(options.destinationHealth),
    onDestinationChange: options.onDestinationChange,
  };
  for (const [name, max] of [
    ['batchSize', MAX_BATCH_SIZE],
    ['concurrency', MAX_CONCURRENCY],
    ['settleGroupSize', MAX_BATCH_SIZE],
  ] as const) {
    const value = settings[name];
    if (!Number.isInteger(value) || value < 1 || value > max) {
      throw new ConfigurationError(`drainOnce: ${name} must be an integer from 1 to ${max}`);
    }
  }
  for (const name of ['maxMessages', 'subrequestBudget'] as const) {
    // Counts of messages and requests: a fraction would size a claim no statement can run.
    const value = settings[name];
    if (!(value >= 0) || (Number.isFinite(value) && !Number.isInteger(value))) {
      throw new ConfigurationError(`drainOnce: ${name} must be a whole number >= 0`);
    }
  }
  if (!Number.isFinite(settings.settleGroupMs) || settings.settleGroupMs < 0) {
    throw new ConfigurationError('drainOnce: settleGroupMs must be a number of ms >= 0');
  }
  for (const name of ['leaseMs', 'sendTimeoutMs', 'roundTripReserveMs'] as const) {
    const value = settings[name];
    if (!Number.isFinite(value) || value <= 0) {
      throw new ConfigurationError(`drainOnce: ${name} must be a positive number of ms`);
    }
  }
  // The invariant that makes leases safe: a send that starts can finish, wait for its group
  // and be settled before the lease runs out, so no other drain can claim a row while its send
  // may run.
  const sendAndSettleMs =
    settings.sendTimeoutMs + settings.settleGroupMs + settings.roundTripReserveMs;
  if (sendAndSettleMs >= settings.leaseMs) {
    throw new ConfigurationError(
      `drainOnce: leaseMs (${settings.leaseMs}) must exceed sendTimeoutMs (${settings.sendTimeoutMs}) plus settleGroupMs (${settings.settleGroupMs}) plus roundTripReserveMs (${settings.roundTripReserveMs})`,
    );
  }
  validateBackoff(settings.backoff);
  settings.recordRun =
    options.recordRun === true &&
    settings.store.recordDrainRun !== undefined &&
    settings.subrequestBudget >= MIN_BUDGET_TO_RECORD_RUN;
  return settings;
}

/**
 * The fewest rows one send request takes among a drain's senders: 1 with any single sender, else
 * the smallest `maxBatch`. Under a subrequest budget a claim takes as many rows as the requests
 * it can pay for send at this many a request, so a drain of batch senders is not held to one
 * message per subrequest; a send still counts its own request before it is made, so rows that
 * go out in smaller batches than that (an ordering key's messages, one at a time) go back
 * unsent when the budget runs out, never past it.
 */
function rowsPerSend(senders: SenderRegistry): number {
  let fewest = Number.POSITIVE_INFINITY;
  for (const [kind, sender] of Object.entries(senders)) {
    if (typeof sender === 'function') return 1;
    if (typeof sender?.send !== 'function') {
      throw new ConfigurationError(
        `drainOnce: the sender of ${kind} is neither a function nor a batch sender (an object with send and maxBatch)`,
      );
    }
    const { maxBatch } = sender;
    if (!Number.isInteger(maxBatch) || maxBatch < 1 || maxBatch > MAX_BATCH_SIZE) {
      throw new ConfigurationError(
        `drainOnce: the batch sender of ${kind} must have a maxBatch from 1 to ${MAX_BATCH_SIZE}, got ${maxBatch}`,
      );
    }
    fewest = Math.min(fewest, maxBatch);
  }
  return fewest;
}

/** The ms left before the deadline, read before every step. */
export function deadlineReader(deadline: DrainOptions['deadline'], clock: Clock): () => number {
  if (deadline === undefined) return () => Number.POSITIVE_INFINITY;
  if (typeof deadline === 'function') return deadline;
  if (Number.isNaN(deadline.getTime())) throw new ConfigurationError('drainOnce: invalid deadline');
  return () => deadline.getTime() - clock.now().getTime();
}
