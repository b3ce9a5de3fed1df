import { CliError, ExitCode, usageError } from '../cli-errors.js';
import { writeJson, writeLine } from '../cli-io.js';
import { defineCommand, JSON_FLAG } from '../command.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { singleMessageId } from '../flag-values.js';
import { count } from '../text-format.js';

export type RetryArguments =
  | { target: 'one'; id: string; json: boolean }
  | { target: 'all-dead'; kind: string | undefined; json: boolean };

/**
 * `outbox retry <id>` / `outbox retry --all-dead [--kind K]`: dead messages back to pending,
 * due now, attempts reset, same key. A message that is not dead is refused (exit 1), saying
 * what state it is in.
 */
export const retryCommand = defineCommand({
  name: 'retry',
  summary: 'make dead messages pending again, due now (same key)',
  usage: '<id> | --all-dead [--kind K] [--json]',
  details: ['Resets the attempt count. Fails (exit 1) when the message is not dead.'],
  flags: {
    'all-dead': { type: 'boolean', description: 'retry every dead message' },
    kind: { type: 'string', placeholder: 'K', description: 'with --all-dead: only this kind' },
    json: JSON_FLAG,
  },
  positionals: true,
  parse(input): RetryArguments {
    const json = input.has('json');
    const kind = input.string('kind');
    if (input.has('all-dead')) {
      if (input.positionals.length > 0) {
        throw usageError('retry: give a message id or --all-dead, not both');
      }
      return { target: 'all-dead', kind, json };
    }
    if (kind !== undefined) throw usageError('--kind: only with --all-dead');
    return {
      target: 'one',
      id: singleMessageId('retry', input.positionals, ' (or --all-dead)'),
      json,
    };
  },
  async run(args, { io, config }) {
    const outbox = outboxFromEnv(io.env, config);
    return withDatabase({ io, config }, outbox, async ({ store }) => {
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
  },
});
