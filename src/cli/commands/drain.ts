import {
  DEFAULT_BATCH_SIZE,
  DRAIN_TUNING_FIELDS,
  type DrainTuning,
  MAX_BATCH_SIZE,
  MAX_CONCURRENCY,
} from '../../core/drain-settings.js';
import { isTransientDrainFailure, runDrainLoop } from '../../runtime/drain-loop.js';
import { createDrainer, MIN_DRAIN_BUDGET_MS } from '../../runtime/drainer.js';
import { describeFailure, ExitCode, isConnectionError, usageError } from '../cli-errors.js';
import { writeJson, writeLine, writeNote } from '../cli-io.js';
import { type CommandContext, defineCommand } from '../command.js';
import type { OutboxCliDrainConfig } from '../config.js';
import { configError } from '../config-file.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { cliLogger, describeReport, summaryJson, summaryLine, tickLine } from '../drain-output.js';
import { drainSenders } from '../drain-senders.js';
import { optionalInteger, parseDuration, parseInteger } from '../flag-values.js';
import { formatDuration, formatTime } from '../text-format.js';

/**
 * Five seconds between drains when the last one found nothing: a new message waits a few
 * seconds at most, and an idle outbox costs two small queries per tick.
 */
export const DEFAULT_DRAIN_INTERVAL_MS = 5_000;

/** Below this the loop only hammers the database; nothing is delivered sooner. */
export const MIN_DRAIN_INTERVAL_MS = 100;

/** Node timers cannot wait longer (2^31 - 1 ms, about 24.8 days); longer ones fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * A minute per tick when draining continuously with no `--budget-ms`: a busy outbox still
 * gets a progress line (and a lag reading) every minute instead of one drain that never ends.
 */
export const DEFAULT_TICK_BUDGET_MS = 60_000;

/**
 * The smallest per-tick deadline: send and round-trip timeouts shrink to fit a budget, but
 * below a second a send gets under half a second, too little for a real provider.
 */
export const MIN_TICK_BUDGET_MS = MIN_DRAIN_BUDGET_MS;

/** The flags as given; what is not given comes from the config file, then the defaults. */
export interface DrainArguments {
  once: boolean;
  /** Pause after a drain that found nothing left. */
  intervalMs: number | undefined;
  /** Deadline of each drain, from its start. */
  budgetMs: number | undefined;
  batchSize: number | undefined;
  concurrency: number | undefined;
  json: boolean;
}

/** The fields a config's `drain` may set; anything else is refused, not passed to drainOnce. */
const DRAIN_CONFIG_FIELDS: ReadonlySet<string> = new Set<keyof OutboxCliDrainConfig>([
  ...DRAIN_TUNING_FIELDS,
  'intervalMs',
  'budgetMs',
]);

/** Flags over the config's `drain`, over the defaults: the drainer's settings and the loop's. */
interface DrainSettings {
  /** What every drain runs with, as `createDrainer` takes it. */
  tuning: DrainTuning;
  intervalMs: number;
  /** undefined: no deadline (`--once` with no budget given anywhere). */
  budgetMs: number | undefined;
}

/**
 * `outbox drain`: runs `drainOnce` with senders built from the environment and the config
 * file. With `--once`, one drain and its report. Otherwise `runDrainLoop` until `io.signal`
 * aborts: the drain in flight then finishes its sends and records every outcome, and the
 * command exits 0.
 */
export const drainCommand = defineCommand({
  name: 'drain',
  summary: 'deliver due messages, once or on an interval',
  usage: '[--once] [--interval 5s] [--budget-ms N] [--batch-size N] [--concurrency N] [--json]',
  details: [
    "Senders come from the environment, as in the deployed functions: webhooks always (OUTBOX_WEBHOOK_SECRET, OUTBOX_ENV, OUTBOX_WEBHOOK_ALLOW_HOSTS), email when SES credentials are set. The config file's senders replace them kind by kind, and its endpointSecret signs webhooks that name an endpointId (without it, those go to dead letter). Kinds without a sender are left pending and named on stderr.",
    'Without --once, drains every --interval and prints a line per tick (delivered, retried, dead, lag); a drain cut short by its budget is followed at once, a failed one that may pass (lost connection, Neon suspending) is retried after the interval. The first Ctrl-C (or SIGTERM) lets the running drain finish its sends and record every outcome, then exits 0; a second one exits at once, leaving messages in flight claimed until their lease expires.',
    '--json with --once prints the drain report; without --once, one JSON line per tick and a final summary line.',
  ],
  flags: {
    once: {
      type: 'boolean',
      description: 'drain until nothing is due (or the budget ends), then exit',
    },
    interval: {
      type: 'string',
      placeholder: 'DURATION',
      description: `pause between drains when nothing was left (default ${DEFAULT_DRAIN_INTERVAL_MS / 1000}s)`,
    },
    'budget-ms': {
      type: 'string',
      placeholder: 'N',
      description: `deadline of each drain in ms, at least ${MIN_TICK_BUDGET_MS} (default: none with --once, ${DEFAULT_TICK_BUDGET_MS} per tick otherwise)`,
    },
    'batch-size': {
      type: 'string',
      placeholder: 'N',
      description: `rows per claim, 1 to ${MAX_BATCH_SIZE} (default ${DEFAULT_BATCH_SIZE})`,
    },
    concurrency: {
      type: 'string',
      placeholder: 'N',
      description: `sends in flight, 1 to ${MAX_CONCURRENCY} (default 10)`,
    },
    json: { type: 'boolean', description: 'JSON on stdout: the report, or one line per tick' },
  },
  parse(input): DrainArguments {
    const once = input.has('once');
    const interval = input.string('interval');
    if (once && interval !== undefined) {
      throw usageError('--interval: has no effect with --once; give one or the other');
    }
    const intervalMs = interval === undefined ? undefined : parseDuration(interval, '--interval');
    if (intervalMs !== undefined && !isTimerInterval(intervalMs)) {
      throw usageError(`--interval: must be from ${intervalRange()}, got ${interval}`);
    }
    const budget = input.string('budget-ms');
    return {
      once,
      intervalMs,
      budgetMs:
        budget === undefined
          ? undefined
          : parseInteger(budget, '--budget-ms', MIN_TICK_BUDGET_MS, Number.MAX_SAFE_INTEGER, {
              why: '(each send gets at most half the budget)',
            }),
      batchSize: optionalInteger(input.string('batch-size'), '--batch-size', 1, MAX_BATCH_SIZE),
      concurrency: optionalInteger(
        input.string('concurrency'),
        '--concurrency',
        1,
        MAX_CONCURRENCY,
      ),
      json: input.has('json'),
    };
  },
  run: runDrain,
});

function isTimerInterval(ms: number): boolean {
  return ms >= MIN_DRAIN_INTERVAL_MS && ms <= MAX_TIMER_MS;
}

function intervalRange(): string {
  return `${MIN_DRAIN_INTERVAL_MS}ms to ${Math.floor(MAX_TIMER_MS / 86_400_000)}d`;
}

async function runDrain(args: DrainArguments, context: CommandContext): Promise<ExitCode> {
  const { io, config, configPath } = context;
  const settings = drainSettings(args, config.drain ?? {}, configPath);
  const outbox = outboxFromEnv(io.env, config);
  return withDatabase(context, outbox, async ({ db, store }) => {
    const senders = await drainSenders({ io, config, configPath, context: { db, env: io.env } });
    const { tuning, intervalMs, budgetMs } = settings;
    const drain = createDrainer({ ...tuning, store, senders, logger: cliLogger(io) });
    if (args.once) {
      const report = await drain({ budgetMs, signal: io.signal });
      if (args.json) writeJson(io.stdout, report);
      else writeLine(io.stdout, describeReport(report));
      return ExitCode.ok;
    }
    writeNote(
      io,
      `draining ${Object.keys(senders).join(', ')}, resting ${formatDuration(intervalMs)} when idle; Ctrl-C to stop`,
    );
    const summary = await runDrainLoop({
      drain,
      intervalMs,
      budgetMs: budgetMs ?? DEFAULT_TICK_BUDGET_MS,
      signal: io.signal ?? new AbortController().signal,
      onTick: async (report, tick) => {
        const { lagMs } = await store.stats(new Date(), { deadHeadBlocks: tuning.deadHeadBlocks });
        if (args.json) writeJson(io.stdout, { type: 'tick', tick, ...report, lagMs });
        else
          writeLine(
            io.stdout,
            `${formatTime(new Date())} tick ${tick}: ${tickLine(report, lagMs)}`,
          );
      },
      // Connection failures the CLI knows (a refused login, too many clients) pass too.
      isTransient: (error) => isTransientDrainFailure(error) || isConnectionError(error),
      onError: ({ error, tick, willRetry }) => {
        if (!willRetry) return;
        writeNote(
          io,
          `tick ${tick} failed: ${describeFailure(error).message}; trying again in ${formatDuration(intervalMs)}`,
        );
      },
      onPermanentFailure: 'stop',
    });
    writeLine(io.stdout, args.json ? JSON.stringify(summaryJson(summary)) : summaryLine(summary));
    return ExitCode.ok;
  });
}

/**
 * Flags win over the config's `drain`, which wins over the defaults. The config's numbers get
 * the flags' checks, as configuration errors naming the file.
 */
function drainSettings(
  args: DrainArguments,
  config: OutboxCliDrainConfig,
  configPath: string | undefined,
): DrainSettings {
  const where = configPath ?? 'outbox.config';
  for (const field of Object.keys(config)) {
    if (!DRAIN_CONFIG_FIELDS.has(field)) {
      throw configError(
        where,
        `unknown field drain.${field}; expected ${[...DRAIN_CONFIG_FIELDS].join(', ')}`,
      );
    }
  }
  const checked = (
    field: keyof OutboxCliDrainConfig,
    valid: (n: number) => boolean,
    rule: string,
  ) => {
    const value = config[field];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !valid(value)) {
      throw configError(where, `drain.${field} must be ${rule}, got ${JSON.stringify(value)}`);
    }
    return value;
  };
  const integerIn = (min: number, max: number) => (n: number) =>
    Number.isSafeInteger(n) && n >= min && n <= max;
  const intervalMs =
    args.intervalMs ??
    checked('intervalMs', isTimerInterval, `a number of ms from ${intervalRange()}`) ??
    DEFAULT_DRAIN_INTERVAL_MS;
  const budgetMs =
    args.budgetMs ??
    checked(
      'budgetMs',
      integerIn(MIN_TICK_BUDGET_MS, Number.MAX_SAFE_INTEGER),
      `a whole number of ms, at least ${MIN_TICK_BUDGET_MS}`,
    ) ??
    (args.once ? undefined : DEFAULT_TICK_BUDGET_MS);
  const batchSize =
    args.batchSize ??
    checked(
      'batchSize',
      integerIn(1, MAX_BATCH_SIZE),
      `a whole number from 1 to ${MAX_BATCH_SIZE}`,
    );
  const concurrency =
    args.concurrency ??
    checked(
      'concurrency',
      integerIn(1, MAX_CONCURRENCY),
      `a whole number from 1 to ${MAX_CONCURRENCY}`,
    );
  // Unknown fields were refused above: the rest of the config's `drain` is the drainer's, whole.
  const { intervalMs: _interval, budgetMs: _budget, ...tuning } = config;
  return { tuning: { ...tuning, batchSize, concurrency }, intervalMs, budgetMs };
}
