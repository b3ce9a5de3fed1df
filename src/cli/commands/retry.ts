import type { RetryArguments } from '../arguments.js';
import { CliError, ExitCode } from '../cli-errors.js';
import { type CliIo, writeJson, writeLine } from '../cli-io.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { count } from '../text-format.js';

/**
 * `outbox retry <id>` / `outbox retry --all-dead [--kind K]`: dead messages back to pending,
 * due now, attempts reset, same key. A message that is not dead is refused (exit 1), saying
 * what state it is in.
 */
export async function runRetry(args: RetryArguments, io: CliIo): Promise<ExitCode> {
  const outbox = outboxFromEnv(io.env);
  return withDatabase(io, outbox, async ({ store }) => {
    if (args.target === 'all-dead') {
      const retried = await store.retryAllDead(new Date(), { kind: args.kind });
      if (args.json) {
        writeJson(io.stdout, { retried });
      } else {
        const kind = args.kind === undefined ? '' : ` of kind ${args.kind}`;
        writeLine(io.stdout, `${count(retried, 'dead message')}${kind} pending again, due now`);
      }
      return ExitCode.ok;
    }
    if (!(await store.retryDead(args.id, new Date()))) {
      const message = await store.get(args.id);
      throw new CliError(
        'CLI_FAILED',
        message === null
          ? `retry: no message with id ${args.id}`
          : `retry: message ${args.id} is ${message.state}, not dead; only dead messages can be retried`,
      );
    }
    if (args.json) {
      writeJson(io.stdout, { id: args.id, state: 'pending' });
    } else {
      writeLine(io.stdout, `message ${args.id} is pending again, due now`);
    }
    return ExitCode.ok;
  });
}
