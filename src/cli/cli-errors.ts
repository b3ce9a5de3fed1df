/**
 * How the `outbox` command fails: its exit codes, its own typed error, and the one place that
 * turns any thrown value into an exit code and a one-line message. Scripts branch on the exit
 * code, so each code means one kind of problem and never changes meaning.
 */
import {
  describeError,
  isOutboxError,
  isValidationError,
  type ValidationError,
} from '../core/errors.js';
import {
  isMissingPasswordFailure,
  missingPasswordMessage,
} from '../drivers/connection-password.js';

/** Exit codes, documented in `outbox --help` and docs/operations.md. */
export const ExitCode = {
  /** Done. */
  ok: 0,
  /** The operation was refused or failed (retry of a message that is not dead, discard of a claimed one). */
  failed: 1,
  /** Bad command line: unknown flag, bad duration, bad JSON, unknown state. Nothing was written. */
  usage: 2,
  /** The environment is wrong: DATABASE_URL missing, bad OUTBOX_SCHEMA, schema not migrated. */
  configuration: 3,
  /** Could not connect to the database, or lost the connection. */
  unreachable: 4,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** A stop forced by a second signal exits 128 + the signal number, as shells report a kill. */
export const FORCED_EXIT_CODE_BASE = 128;

export type CliErrorCode = 'CLI_FAILED' | 'CLI_USAGE' | 'CLI_CONFIGURATION' | 'CLI_UNREACHABLE';

const EXIT_CODE_BY_ERROR_CODE: Readonly<Record<CliErrorCode, ExitCode>> = {
  CLI_FAILED: ExitCode.failed,
  CLI_USAGE: ExitCode.usage,
  CLI_CONFIGURATION: ExitCode.configuration,
  CLI_UNREACHABLE: ExitCode.unreachable,
};

/** An error the CLI raises on purpose; its `code` decides the exit code. */
export class CliError extends Error {
  readonly code: CliErrorCode;

  constructor(code: CliErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CliError';
    this.code = code;
  }
}

export function isCliError(error: unknown): error is CliError {
  return (
    typeof error === 'object' &&
    error !== null &&
    'code' in error &&
    typeof error.code === 'string' &&
    error.code in EXIT_CODE_BY_ERROR_CODE
  );
}

/** A bad command line; `message` names the flag first, as in `--delay: ...`. */
export function usageError(message: string): CliError {
  return new CliError('CLI_USAGE', message);
}

/**
 * Failures that mean "no working connection": network errors before Postgres answered,
 * SQLSTATE class 08 (connection exception), the server shutting down or starting up, too many
 * connections, and the login being refused (wrong password, no such database).
 */
const CONNECTION_SQLSTATES: ReadonlySet<string> = new Set([
  '28000', // invalid_authorization_specification
  '28P01', // invalid_password
  '3D000', // invalid_catalog_name: the database in the URL does not exist
  '53300', // too_many_connections
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
]);

const CONNECTION_NETWORK_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
]);

/** Undefined table or schema: the outbox schema was never migrated in this database. */
const UNMIGRATED_SQLSTATES: ReadonlySet<string> = new Set(['42P01', '3F000']);

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error
    ? typeof error.code === 'string'
      ? error.code
      : undefined
    : undefined;
}

/** True when `error` says the database could not be reached or the connection was lost. */
export function isConnectionError(error: unknown): boolean {
  const code = errorCode(error);
  if (code === undefined) return false;
  return (
    code.startsWith('08') || CONNECTION_SQLSTATES.has(code) || CONNECTION_NETWORK_CODES.has(code)
  );
}

/**
 * The reason a connection failed, readable without the driver's internals. Node reports a
 * refused connection to a name with several addresses as an AggregateError with no message,
 * so fall back to the code; pg's SCRAM complaint about a missing password says what to add.
 */
export function connectionFailureReason(error: unknown): string {
  if (isMissingPasswordFailure(error)) return missingPasswordMessage('DATABASE_URL');
  const code = errorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'ECONNREFUSED') return 'connection refused (ECONNREFUSED)';
  if (code === 'ENOTFOUND') return 'host not found (ENOTFOUND)';
  if (message === '') return code ?? describeError(error);
  return code === undefined || message.includes(code) ? message : `${message} (${code})`;
}

/**
 * Flags named in place of the library's field paths, so a rejected `--payload` says
 * `--payload`. Longest prefix wins; fields not listed keep their own name.
 */
const FLAG_FOR_FIELD: readonly [string, string][] = [
  ['message.kind', '--kind'],
  ['message.payload', '--payload'],
  ['message.orderingKey', '--ordering-key'],
  ['message.dedupeKey', '--dedupe-key'],
  ['message.delayMs', '--delay'],
  ['message.maxAttempts', '--max-attempts'],
  ['message.key', '--key'],
  ['state', '--state'],
  ['limit', '--limit'],
  ['cursor', '--cursor'],
  ['id', '<id>'],
];

/**
 * `--payload: payload.url: is required` for field `message.payload.url`; `--limit: expected
 * ...` for field `limit`. The path inside a payload stays, since it says which part is wrong.
 */
function validationMessage(error: ValidationError): string {
  const { field } = error;
  const reason = error.message.startsWith(`${field}: `)
    ? error.message.slice(field.length + 2)
    : error.message;
  for (const [prefix, flag] of FLAG_FOR_FIELD) {
    if (field === prefix) return `${flag}: ${reason}`;
    if (field.startsWith(`${prefix}.`) || field.startsWith(`${prefix}[`)) {
      return `${flag}: ${field.replace(/^message\./, '')}: ${reason}`;
    }
  }
  return error.message;
}

export interface CliFailure {
  exitCode: ExitCode;
  /** One line, without the `outbox: ` prefix. */
  message: string;
}

/**
 * Maps anything a command threw to an exit code and one line for stderr:
 *
 * | thrown | exit |
 * | --- | --- |
 * | `CliError` | by its code |
 * | `ValidationError` (bad input caught before any write) | 2 usage, naming the flag |
 * | `ConfigurationError`, missing outbox table or schema | 3 configuration |
 * | connection errors (see {@link isConnectionError}) | 4 unreachable |
 * | anything else | 1 failed |
 */
export function describeFailure(error: unknown): CliFailure {
  if (isCliError(error)) {
    return { exitCode: EXIT_CODE_BY_ERROR_CODE[error.code], message: oneLine(error.message) };
  }
  if (isValidationError(error)) {
    return { exitCode: ExitCode.usage, message: oneLine(validationMessage(error)) };
  }
  if (isOutboxError(error) && error.code === 'OUTBOX_CONFIGURATION') {
    return { exitCode: ExitCode.configuration, message: oneLine(error.message) };
  }
  const code = errorCode(error);
  if (code !== undefined && UNMIGRATED_SQLSTATES.has(code)) {
    return {
      exitCode: ExitCode.configuration,
      message: oneLine(
        `the outbox schema is not migrated in this database (${error instanceof Error ? error.message : String(error)}): run \`outbox migrate\` first`,
      ),
    };
  }
  if (isConnectionError(error)) {
    return {
      exitCode: ExitCode.unreachable,
      message: oneLine(`lost the database connection: ${connectionFailureReason(error)}`),
    };
  }
  if (isOutboxError(error) && error.code === 'OUTBOX_DATABASE' && isConnectionError(error.cause)) {
    return {
      exitCode: ExitCode.unreachable,
      message: oneLine(`${error.message}: ${connectionFailureReason(error.cause)}`),
    };
  }
  return { exitCode: ExitCode.failed, message: oneLine(describeError(error)) };
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

/**
 * A stop signal this soon after the first is the same key press, not a second one: one Ctrl-C
 * under `npm run` or `npx` reaches the command twice (the terminal signals the whole process
 * group, and npm forwards it to its child again). Only a later signal forces the exit.
 */
export const SAME_PRESS_MS = 500;
