/**
 * What a command may touch besides the database: injected, so tests run commands in-process
 * with collected output, their own environment and their own stop signal.
 */

/** Where text goes: `process.stdout`, or a collector in tests. */
export interface TextSink {
  write(text: string): unknown;
}

export interface CliIo {
  /** Results only: tables, keys, JSON. What scripts read. */
  stdout: TextSink;
  /** Errors, warnings and progress notes, one line each. */
  stderr: TextSink;
  env: Readonly<Record<string, string | undefined>>;
  /** Where `outbox.config.*` is looked for, and `--config` is relative to. Default `process.cwd()`. */
  cwd?: string;
  /** Asks a running drain to stop: it finishes its sends and records every outcome first. */
  signal?: AbortSignal;
}

/** `OUTBOX_DEBUG=1`: stack traces on errors and the drain's debug log. */
export function isDebug(io: CliIo): boolean {
  return io.env.OUTBOX_DEBUG === '1';
}

export function writeLine(sink: TextSink, text = ''): void {
  sink.write(`${text}\n`);
}

/** One JSON object on one line: `--json` output is exactly this, nothing else on stdout. */
export function writeJson(sink: TextSink, value: unknown): void {
  sink.write(`${JSON.stringify(value)}\n`);
}

/** A note for the operator on stderr, so stdout stays machine-readable. */
export function writeNote(io: CliIo, text: string): void {
  io.stderr.write(`outbox: ${text}\n`);
}
