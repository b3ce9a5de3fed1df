import type { JsonValue, NewMessage } from '../../core/message.js';
import { ExitCode, usageError } from '../cli-errors.js';
import { writeJson, writeLine } from '../cli-io.js';
import { defineCommand, JSON_FLAG } from '../command.js';
import { outboxFromEnv, withDatabase } from '../database-from-env.js';
import { optionalInteger, parseDuration } from '../flag-values.js';

export interface EnqueueArguments {
  message: NewMessage;
  json: boolean;
}

/**
 * `outbox enqueue`: writes one message and prints its key (the existing message's key when the
 * dedupe key is taken). The message is validated before connecting, so a rejected one exits 2
 * having written nothing, whatever the database's state.
 */
export const enqueueCommand = defineCommand({
  name: 'enqueue',
  summary: 'add one message and print its key',
  usage:
    '--kind K --payload JSON [--ordering-key K] [--dedupe-key K] [--delay 30s] [--max-attempts N] [--key UUID] [--json]',
  details: [
    'The payload is checked as the library checks it (email and webhook payloads by their schema, your own kinds by the config\'s kinds); a rejected message exits 2 naming the flag and writes nothing. With a dedupe key that already exists, prints the existing message\'s key. A payload starting with "-" goes as --payload=VALUE.',
  ],
  flags: {
    kind: { type: 'string', placeholder: 'K', description: 'email, webhook, or a kind of yours' },
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
  },
  parse(input): EnqueueArguments {
    const kind = input.string('kind');
    if (kind === undefined) throw usageError('--kind: required (email or webhook)');
    const payloadText = input.string('payload');
    if (payloadText === undefined) throw usageError('--payload: required, as JSON');
    let payload: JsonValue;
    try {
      payload = JSON.parse(payloadText) as JsonValue;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw usageError(`--payload: not valid JSON (${reason})`);
    }
    const message: NewMessage = { kind, payload };
    const orderingKey = input.string('ordering-key');
    if (orderingKey !== undefined) message.orderingKey = orderingKey;
    const dedupeKey = input.string('dedupe-key');
    if (dedupeKey !== undefined) message.dedupeKey = dedupeKey;
    const delay = input.string('delay');
    if (delay !== undefined) message.delayMs = parseDuration(delay, '--delay');
    const maxAttempts = optionalInteger(
      input.string('max-attempts'),
      '--max-attempts',
      1,
      Number.MAX_SAFE_INTEGER,
    );
    if (maxAttempts !== undefined) message.maxAttempts = maxAttempts;
    const key = input.string('key');
    if (key !== undefined) message.key = key;
    return { message, json: input.has('json') };
  },
  async run(args, { io, config }) {
    const outbox = outboxFromEnv(io.env, config);
    // Builds the statement without running it: throws ValidationError naming the field.
    outbox.enqueueStatement(args.message);
    const [key] = await withDatabase({ io, config }, outbox, ({ db }) =>
      outbox.enqueue(db, args.message),
    );
    if (args.json) {
      writeJson(io.stdout, { key });
    } else {
      writeLine(io.stdout, key);
    }
    return ExitCode.ok;
  },
});
