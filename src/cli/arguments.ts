/**
 * The command line, parsed without touching anything: argv in, a typed request out, or a
 * usage error naming the flag. Pure, so every rule here is unit-tested in-process. The flag
 * tables below are also what `--help` prints, so help and parsing cannot drift apart.
 */
import { parseArgs } from 'node:util';
import { MAX_BATCH_SIZE, MAX_CONCURRENCY } from '../core/drain.js';
import type { JsonValue, NewMessage } from '../core/message.js';
import { isMessageId } from '../core/message-id.js';
import { MESSAGE_STATES, type MessageState } from '../core/outbox-store.js';
import { DEFAULT_PURGE_LIMIT } from '../core/purge.js';
import { MIN_DRAIN_BUDGET_MS } from '../runtime/drainer.js';
import { MAX_LIST_LIMIT } from '../store/postgres-store.js';
import { usageError } from './cli-errors.js';

export const COMMAND_NAMES = [
  'migrate',
  'drain',
  'stats',
  'list',
  'retry',
  'discard',
  'purge',
  'enqueue',
] as const;

export type CommandName = (typeof COMMAND_NAMES)[number];

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

export interface FlagSpec {
  type: 'string' | 'boolean';
  /** What the value looks like in help: `N`, `5s`, `JSON`. */
  placeholder?: string;
  short?: string;
  description: string;
}

export interface CommandSpec {
  summary: string;
  /** Everything after `outbox <command>` in the usage line. */
  usage: string;
  /** Paragraphs printed under the usage line. */
  details: readonly string[];
  flags: Readonly<Record<string, FlagSpec>>;
}

const HELP_FLAG: FlagSpec = { type: 'boolean', short: 'h', description: 'show this help' };
const JSON_FLAG: FlagSpec = {
  type: 'boolean',
  description: 'print exactly one JSON object on stdout instead of text',
};

export const COMMAND_SPECS: Readonly<Record<CommandName, CommandSpec>> = {
  migrate: {
    summary: 'create or update the outbox schema (idempotent)',
    usage: '[--json]',
    details: [
      'Applies the bundled migrations to OUTBOX_SCHEMA in one transaction behind an advisory lock, so concurrent runs are safe.',
    ],
    flags: { json: JSON_FLAG, help: HELP_FLAG },
  },
  drain: {
    summary: 'deliver due messages, once or on an interval',
    usage: '[--once] [--interval 5s] [--budget-ms N] [--batch-size N] [--concurrency N] [--json]',
    details: [
      'Senders come from the environment, as in the deployed functions: webhooks always (OUTBOX_WEBHOOK_SECRET, OUTBOX_ENV, OUTBOX_WEBHOOK_ALLOW_HOSTS), email when SES credentials are set. Kinds without a sender are left pending and named on stderr.',
      'Without --once, drains every --interval and prints a line per tick (delivered, retried, dead, lag). The first Ctrl-C (or SIGTERM) lets the running drain finish its sends and record every outcome, then exits 0; a second one exits at once, leaving messages in flight claimed until their lease expires.',
      `--json with --once prints the drain report; without --once, one JSON line per tick and a final summary line.`,
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
        description: 'rows per claim, 1 to 1000 (default 25)',
      },
      concurrency: {
        type: 'string',
        placeholder: 'N',
        description: 'sends in flight, 1 to 1000 (default 10)',
      },
      json: { type: 'boolean', description: 'JSON on stdout: the report, or one line per tick' },
      help: HELP_FLAG,
    },
  },
  stats: {
    summary: 'count messages by state and show the delivery lag',
    usage: '[--json]',
    details: [
      'Lag is the age of the oldest message that is due and not being delivered: how far behind the drains are.',
    ],
    flags: { json: JSON_FLAG, help: HELP_FLAG },
  },
  list: {
    summary: 'list the messages in one state, a page at a time',
    usage: '--state pending|claimed|delivered|dead [--kind K] [--limit N] [--cursor C] [--json]',
    details: [
      'Pending and claimed messages come in due order, delivered and dead ones newest first. When there is another page, the last line shows the --cursor that fetches it.',
    ],
    flags: {
      state: { type: 'string', placeholder: 'STATE', description: MESSAGE_STATES.join(', ') },
      kind: { type: 'string', placeholder: 'K', description: 'only messages of this kind' },
      limit: {
        type: 'string',
        placeholder: 'N',
        description: `messages per page, 1 to ${MAX_LIST_LIMIT} (default 50)`,
      },
      cursor: {
        type: 'string',
        placeholder: 'C',
        description: 'the cursor a previous page printed',
      },
      json: JSON_FLAG,
      help: HELP_FLAG,
    },
  },
  retry: {
    summary: 'make dead messages pending again, due now (same key)',
    usage: '<id> | --all-dead [--kind K] [--json]',
    details: ['Resets the attempt count. Fails (exit 1) when the message is not dead.'],
    flags: {
      'all-dead': { type: 'boolean', description: 'retry every dead message' },
      kind: { type: 'string', placeholder: 'K', description: 'with --all-dead: only this kind' },
      json: JSON_FLAG,
      help: HELP_FLAG,
    },
  },
  discard: {
    summary: 'delete one message that is not being delivered',
    usage: '<id> [--json]',
    details: [
      'Cannot be undone. Refused (exit 1) while the message is claimed: its drain may be sending it; try again once it settles.',
    ],
    flags: { json: JSON_FLAG, help: HELP_FLAG },
  },
  purge: {
    summary: 'delete old delivered and dead messages, in bounded batches',
    usage: '--older-than 7d | --delivered-older-than D | --dead-older-than D [--limit N] [--json]',
    details: [
      '--older-than applies to both delivered and dead messages; the specific flags override it for one state, and a state with no age is kept. Pending and claimed messages are never touched.',
    ],
    flags: {
      'older-than': {
        type: 'string',
        placeholder: 'DURATION',
        description: 'delete delivered and dead messages older than this',
      },
      'delivered-older-than': {
        type: 'string',
        placeholder: 'DURATION',
        description: 'delete delivered messages older than this',
      },
      'dead-older-than': {
        type: 'string',
        placeholder: 'DURATION',
        description: 'delete dead messages older than this',
      },
      limit: {
        type: 'string',
        placeholder: 'N',
        description: `delete at most this many rows in all (default ${DEFAULT_PURGE_LIMIT})`,
      },
      json: JSON_FLAG,
      help: HELP_FLAG,
    },
  },
  enqueue: {
    summary: 'add one message and print its key',
    usage:
      '--kind K --payload JSON [--ordering-key K] [--dedupe-key K] [--delay 30s] [--max-attempts N] [--key UUID] [--json]',
    details: [
      "The payload is checked as the library checks it (email and webhook payloads by their schema); a rejected message exits 2 naming the flag and writes nothing. With a dedupe key that already exists, prints the existing message's key.",
    ],
    flags: {
      kind: { type: 'string', placeholder: 'K', description: 'email or webhook' },
      payload: { type: 'string', placeholder: 'JSON', description: 'the payload, as JSON' },
      'ordering-key': {
        type: 'string',
        placeholder: 'K',
        description: 'deliver one at a time, in enqueue order, with others of this key',
      },
      'dedupe-key': {
        type: 'string',
        placeholder: 'K',
        description: 'a second enqueue with this key yields the first message',
      },
      delay: {
        type: 'string',
        placeholder: 'DURATION',
        description: 'deliver no earlier than this from now',
      },
      'max-attempts': {
        type: 'string',
        placeholder: 'N',
        description: 'attempts before dead letter (default 10)',
      },
      key: { type: 'string', placeholder: 'UUID', description: 'your own message key' },
      json: JSON_FLAG,
      help: HELP_FLAG,
    },
  },
};

export interface MigrateArguments {
  json: boolean;
}

export interface DrainArguments {
  once: boolean;
  /** Pause after a drain that found nothing left. */
  intervalMs: number;
  /** Deadline of each drain, from its start; undefined = none. */
  budgetMs: number | undefined;
  batchSize: number | undefined;
  concurrency: number | undefined;
  json: boolean;
}

export interface StatsArguments {
  json: boolean;
}

export interface ListArguments {
  state: MessageState;
  kind: string | undefined;
  limit: number | undefined;
  cursor: string | undefined;
  json: boolean;
}

export type RetryArguments =
  | { target: 'one'; id: string; json: boolean }
  | { target: 'all-dead'; kind: string | undefined; json: boolean };

export interface DiscardArguments {
  id: string;
  json: boolean;
}

export interface PurgeArguments {
  /** null keeps delivered messages. */
  deliveredOlderThanMs: number | null;
  /** null keeps dead messages. */
  deadOlderThanMs: number | null;
  limit: number;
  json: boolean;
}

export interface EnqueueArguments {
  message: NewMessage;
  json: boolean;
}

export interface CommandArguments {
  migrate: MigrateArguments;
  drain: DrainArguments;
  stats: StatsArguments;
  list: ListArguments;
  retry: RetryArguments;
  discard: DiscardArguments;
  purge: PurgeArguments;
  enqueue: EnqueueArguments;
}

export type CommandRequest<Name extends CommandName = CommandName> = {
  [K in Name]: { command: K; args: CommandArguments[K] };
}[Name];

/** What the command line asks for: a command, or help (on one command or on all). */
export type CommandLine =
  | CommandRequest
  | { command: 'help'; topic: CommandName | undefined; requested: boolean };

function isCommandName(name: string): name is CommandName {
  return (COMMAND_NAMES as readonly string[]).includes(name);
}

/**
 * Parses `outbox <command> [flags]` (argv without node and the script). Throws a usage
 * `CliError` naming the flag on the first problem. `--help` anywhere before `--` wins over
 * every other problem, so help is always reachable.
 *
 * @example
 * parseCommandLine(['list', '--state', 'dead', '--limit', '10']);
 * // { command: 'list', args: { state: 'dead', limit: 10, kind: undefined, ... } }
 */
export function parseCommandLine(argv: readonly string[]): CommandLine {
  const [first, ...rest] = argv;
  if (first === undefined) return { command: 'help', topic: undefined, requested: false };
  if (first === '--help' || first === '-h') {
    return { command: 'help', topic: undefined, requested: true };
  }
  if (first === 'help') {
    const [topic, ...extra] = rest;
    if (topic === undefined) return { command: 'help', topic: undefined, requested: true };
    if (!isCommandName(topic) || extra.length > 0) {
      throw usageError(
        `help: unknown command "${argv.slice(1).join(' ')}" (${COMMAND_NAMES.join(', ')})`,
      );
    }
    return { command: 'help', topic, requested: true };
  }
  if (!isCommandName(first)) {
    const what = first.startsWith('-')
      ? `option ${first} before the command`
      : `command "${first}"`;
    throw usageError(`unknown ${what}; commands: ${COMMAND_NAMES.join(', ')}`);
  }
  const beforeTerminator = rest.indexOf('--') === -1 ? rest : rest.slice(0, rest.indexOf('--'));
  if (beforeTerminator.includes('--help') || beforeTerminator.includes('-h')) {
    return { command: 'help', topic: first, requested: true };
  }
  const flags = readFlags(first, rest);
  return commandRequest(first, flags);
}

function commandRequest(name: CommandName, flags: Flags): CommandRequest {
  switch (name) {
    case 'migrate':
      return { command: name, args: parseMigrate(flags) };
    case 'drain':
      return { command: name, args: parseDrain(flags) };
    case 'stats':
      return { command: name, args: parseStats(flags) };
    case 'list':
      return { command: name, args: parseList(flags) };
    case 'retry':
      return { command: name, args: parseRetry(flags) };
    case 'discard':
      return { command: name, args: parseDiscard(flags) };
    case 'purge':
      return { command: name, args: parsePurge(flags) };
    case 'enqueue':
      return { command: name, args: parseEnqueue(flags) };
  }
}

/** Flag values as given, checked only against the command's flag table. */
interface Flags {
  command: CommandName;
  strings: ReadonlyMap<string, string>;
  booleans: ReadonlySet<string>;
  positionals: readonly string[];
}

/**
 * Tokenises with `parseArgs` in non-strict mode and applies the rules ourselves, so each
 * message names the flag in our words: unknown flags, missing values, values given to
 * switches, and flags given twice are all usage errors.
 */
function readFlags(command: CommandName, args: readonly string[]): Flags {
  const spec = COMMAND_SPECS[command].flags;
  const options = Object.fromEntries(
    Object.entries(spec).map(([name, flag]) => [
      name,
      flag.short === undefined ? { type: flag.type } : { type: flag.type, short: flag.short },
    ]),
  );
  const { tokens } = parseArgs({
    args: [...args],
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const strings = new Map<string, string>();
  const booleans = new Set<string>();
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'positional') {
      positionals.push(token.value);
      continue;
    }
    if (token.kind === 'option-terminator') continue;
    const flag = spec[token.name];
    if (flag === undefined) {
      throw usageError(
        `${command}: unknown option ${token.rawName} (see outbox ${command} --help)`,
      );
    }
    const name = `--${token.name}`;
    if (strings.has(token.name) || booleans.has(token.name)) {
      throw usageError(`${name}: given more than once`);
    }
    if (flag.type === 'boolean') {
      if (token.value !== undefined) throw usageError(`${name}: takes no value`);
      booleans.add(token.name);
      continue;
    }
    // parseArgs takes the next argument as the value even when it is another flag; a missing
    // value is far likelier than a value that starts with "--".
    if (token.value === undefined || (!token.inlineValue && token.value.startsWith('--'))) {
      throw usageError(`${name}: needs a value (${flag.placeholder ?? 'VALUE'})`);
    }
    strings.set(token.name, token.value);
  }
  return { command, strings, booleans, positionals };
}

function noPositionals(flags: Flags): void {
  const [extra] = flags.positionals;
  if (extra !== undefined) {
    throw usageError(`${flags.command}: unexpected argument "${extra}"`);
  }
}

function parseMigrate(flags: Flags): MigrateArguments {
  noPositionals(flags);
  return { json: flags.booleans.has('json') };
}

function parseStats(flags: Flags): StatsArguments {
  noPositionals(flags);
  return { json: flags.booleans.has('json') };
}

function parseDrain(flags: Flags): DrainArguments {
  noPositionals(flags);
  const once = flags.booleans.has('once');
  const interval = flags.strings.get('interval');
  if (once && interval !== undefined) {
    throw usageError('--interval: has no effect with --once; give one or the other');
  }
  const intervalMs =
    interval === undefined ? DEFAULT_DRAIN_INTERVAL_MS : parseDuration(interval, '--interval');
  if (intervalMs < MIN_DRAIN_INTERVAL_MS || intervalMs > MAX_TIMER_MS) {
    throw usageError(
      `--interval: must be from ${MIN_DRAIN_INTERVAL_MS}ms to ${Math.floor(MAX_TIMER_MS / 86_400_000)}d, got ${interval}`,
    );
  }
  const budget = flags.strings.get('budget-ms');
  const budgetMs =
    budget === undefined
      ? undefined
      : parseInteger(budget, '--budget-ms', MIN_TICK_BUDGET_MS, Number.MAX_SAFE_INTEGER, {
          why: '(each send gets at most half the budget)',
        });
  return {
    once,
    intervalMs,
    budgetMs: budgetMs ?? (once ? undefined : DEFAULT_TICK_BUDGET_MS),
    batchSize: optionalInteger(flags, 'batch-size', 1, MAX_BATCH_SIZE),
    concurrency: optionalInteger(flags, 'concurrency', 1, MAX_CONCURRENCY),
    json: flags.booleans.has('json'),
  };
}

function parseList(flags: Flags): ListArguments {
  noPositionals(flags);
  const state = flags.strings.get('state');
  if (state === undefined) {
    throw usageError(`--state: required, one of ${MESSAGE_STATES.join(', ')}`);
  }
  if (!(MESSAGE_STATES as readonly string[]).includes(state)) {
    throw usageError(
      `--state: unknown state "${state}"; expected one of ${MESSAGE_STATES.join(', ')}`,
    );
  }
  return {
    state: state as MessageState,
    kind: flags.strings.get('kind'),
    limit: optionalInteger(flags, 'limit', 1, MAX_LIST_LIMIT),
    cursor: flags.strings.get('cursor'),
    json: flags.booleans.has('json'),
  };
}

function parseRetry(flags: Flags): RetryArguments {
  const json = flags.booleans.has('json');
  const kind = flags.strings.get('kind');
  if (flags.booleans.has('all-dead')) {
    if (flags.positionals.length > 0) {
      throw usageError('retry: give a message id or --all-dead, not both');
    }
    return { target: 'all-dead', kind, json };
  }
  if (kind !== undefined) throw usageError('--kind: only with --all-dead');
  return { target: 'one', id: singleMessageId(flags), json };
}

function parseDiscard(flags: Flags): DiscardArguments {
  return { id: singleMessageId(flags), json: flags.booleans.has('json') };
}

function singleMessageId(flags: Flags): string {
  const [id, extra] = flags.positionals;
  const alternative = flags.command === 'retry' ? ' (or --all-dead)' : '';
  if (id === undefined) {
    throw usageError(
      `${flags.command}: give the message id${alternative}, as \`outbox list\` shows it`,
    );
  }
  if (extra !== undefined) throw usageError(`${flags.command}: one message id at a time`);
  if (!isMessageId(id)) {
    throw usageError(
      `${flags.command}: "${id}" is not a message id (a positive integer, the ID column of \`outbox list\`)`,
    );
  }
  return id;
}

function parsePurge(flags: Flags): PurgeArguments {
  noPositionals(flags);
  const age = (name: string) => {
    const text = flags.strings.get(name);
    return text === undefined ? undefined : parseDuration(text, `--${name}`);
  };
  const both = age('older-than');
  const delivered = age('delivered-older-than') ?? both;
  const deadAge = age('dead-older-than') ?? both;
  if (delivered === undefined && deadAge === undefined) {
    throw usageError(
      'purge: give --older-than (or --delivered-older-than / --dead-older-than): purge never guesses an age',
    );
  }
  return {
    deliveredOlderThanMs: delivered ?? null,
    deadOlderThanMs: deadAge ?? null,
    limit: optionalInteger(flags, 'limit', 1, Number.MAX_SAFE_INTEGER) ?? DEFAULT_PURGE_LIMIT,
    json: flags.booleans.has('json'),
  };
}

function parseEnqueue(flags: Flags): EnqueueArguments {
  noPositionals(flags);
  const kind = flags.strings.get('kind');
  if (kind === undefined) throw usageError('--kind: required (email or webhook)');
  const payloadText = flags.strings.get('payload');
  if (payloadText === undefined) throw usageError('--payload: required, as JSON');
  let payload: JsonValue;
  try {
    payload = JSON.parse(payloadText) as JsonValue;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw usageError(`--payload: not valid JSON (${reason})`);
  }
  const message: NewMessage = { kind, payload };
  const orderingKey = flags.strings.get('ordering-key');
  if (orderingKey !== undefined) message.orderingKey = orderingKey;
  const dedupeKey = flags.strings.get('dedupe-key');
  if (dedupeKey !== undefined) message.dedupeKey = dedupeKey;
  const delay = flags.strings.get('delay');
  if (delay !== undefined) message.delayMs = parseDuration(delay, '--delay');
  const maxAttempts = optionalInteger(flags, 'max-attempts', 1, Number.MAX_SAFE_INTEGER);
  if (maxAttempts !== undefined) message.maxAttempts = maxAttempts;
  const key = flags.strings.get('key');
  if (key !== undefined) message.key = key;
  return { message, json: flags.booleans.has('json') };
}

function optionalInteger(flags: Flags, name: string, min: number, max: number): number | undefined {
  const text = flags.strings.get(name);
  return text === undefined ? undefined : parseInteger(text, `--${name}`, min, max);
}

const DURATION_UNITS_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * A duration such as `500ms`, `30s`, `5m`, `2h` or `7d`, in milliseconds: a whole number and
 * one unit. A bare number is refused, because `--delay 30` could mean seconds or ms.
 *
 * @example
 * parseDuration('7d', '--older-than'); // 604800000
 */
export function parseDuration(text: string, flag: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  const amount = match ? Number(match[1]) : Number.NaN;
  const unit = match ? DURATION_UNITS_MS[match[2]!]! : Number.NaN;
  const ms = amount * unit;
  if (!Number.isSafeInteger(ms)) {
    throw usageError(
      `${flag}: "${text}" is not a duration; use a whole number and a unit: 500ms, 30s, 5m, 2h, 7d`,
    );
  }
  return ms;
}

/** A whole number from `min` to `max`, written in decimal digits. */
export function parseInteger(
  text: string,
  flag: string,
  min: number,
  max: number,
  options: { why?: string } = {},
): number {
  const value = /^\d+$/.test(text.trim()) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `at least ${min}` : `from ${min} to ${max}`;
    const why = options.why === undefined ? '' : ` ${options.why}`;
    throw usageError(`${flag}: expected a whole number ${range}, got "${text}"${why}`);
  }
  return value;
}
