/**
 * The "your own kind" example from docs/senders.md (a Slack post), kept here so the example
 * compiles and behaves as documented. A loopback server stands in for slack.com/api.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createOutbox,
  isPermanentDeliveryError,
  isRetryableDeliveryError,
  isValidationError,
  type PayloadValidator,
  PermanentDeliveryError,
  RetryableDeliveryError,
  type Sender,
  ValidationError,
} from '../../src/index.js';
import { type LoopbackServer, startLoopbackServer } from '../support/loopback-http.js';
import { openSignal, outboundMessage } from './outbound-message.js';

// --- from docs/senders.md ---------------------------------------------------------------------

type SlackPostPayload = { channel: string; text: string };

/** Checked at enqueue: a bad payload is a 400 naming the field, not a dead letter later. */
const slackPostValidator: PayloadValidator = (payload, field) => {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new ValidationError(field, 'expected { channel, text }');
  }
  if (typeof payload.channel !== 'string' || !/^[CDG][A-Z0-9]{8,}$/.test(payload.channel)) {
    throw new ValidationError(`${field}.channel`, 'expected a channel ID such as C0123456789');
  }
  if (typeof payload.text !== 'string' || payload.text.length === 0) {
    throw new ValidationError(`${field}.text`, 'expected a non-empty string');
  }
};

/** Slack error codes that no retry can fix. Anything else (ratelimited, fatal_error) may pass. */
const PERMANENT_SLACK_ERRORS = new Set([
  'channel_not_found',
  'not_in_channel',
  'is_archived',
  'msg_too_long',
  'invalid_auth',
  'account_inactive',
  'token_revoked',
]);

function slackPostSender(token: string, apiBase = 'https://slack.com/api'): Sender {
  return async (message, signal) => {
    const { channel, text } = message.payload as SlackPostPayload;
    let response: Response;
    try {
      response = await fetch(`${apiBase}/chat.postMessage`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json; charset=utf-8',
        },
        // Slack has no idempotency key: the message key rides along so duplicates are traceable.
        body: JSON.stringify({
          channel,
          text,
          metadata: { event_type: 'outbox_message', event_payload: { key: message.key } },
        }),
        signal,
      });
    } catch (error) {
      throw new RetryableDeliveryError(`Slack unreachable: ${String(error)}`, { cause: error });
    }
    if (response.status === 429) {
      const seconds = Number(response.headers.get('retry-after') ?? '30');
      throw new RetryableDeliveryError('Slack rate limit', { retryAfterMs: seconds * 1000 });
    }
    if (!response.ok) throw new RetryableDeliveryError(`Slack answered HTTP ${response.status}`);
    const result = (await response.json()) as { ok: boolean; error?: string };
    if (result.ok) return;
    const error = result.error ?? 'unknown_error';
    if (PERMANENT_SLACK_ERRORS.has(error)) throw new PermanentDeliveryError(`Slack: ${error}`);
    throw new RetryableDeliveryError(`Slack: ${error}`);
  };
}

// --- end of the example -------------------------------------------------------------------------

describe('a custom kind built on the sender contract (docs/senders.md)', () => {
  let slack: LoopbackServer;
  let nextReply: { status: number; body: unknown; headers?: Record<string, string> };

  beforeAll(async () => {
    slack = await startLoopbackServer((_request, response) => {
      response.writeHead(nextReply.status, {
        'content-type': 'application/json',
        ...nextReply.headers,
      });
      response.end(JSON.stringify(nextReply.body));
    });
  });

  afterAll(() => slack.close());

  const post = (payload: SlackPostPayload) =>
    slackPostSender('xoxb-test', `${slack.url}/api`)(
      outboundMessage('slack.post', payload),
      openSignal(),
    );

  it('registers the validator so enqueue rejects a bad payload by field', () => {
    const outbox = createOutbox({ kinds: { 'slack.post': slackPostValidator } });
    let rejected: unknown;
    try {
      outbox.enqueueStatement({ kind: 'slack.post', payload: { channel: '#general', text: 'hi' } });
    } catch (error) {
      rejected = error;
    }
    expect(isValidationError(rejected)).toBe(true);
    expect((rejected as ValidationError).field).toBe('message.payload.channel');
    expect(
      outbox.enqueueStatement({
        kind: 'slack.post',
        payload: { channel: 'C0123456789', text: 'hi' },
      }).keys,
    ).toHaveLength(1);
  });

  it('delivers, carrying the message key, when Slack says ok', async () => {
    nextReply = { status: 200, body: { ok: true, ts: '1.2' } };
    await post({ channel: 'C0123456789', text: 'Deploy finished' });
    const sent = JSON.parse(slack.requests.at(-1)!.body);
    expect(sent.channel).toBe('C0123456789');
    expect(sent.metadata.event_payload.key).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('dead-letters what Slack will never accept, and retries the rest', async () => {
    nextReply = { status: 200, body: { ok: false, error: 'channel_not_found' } };
    await expect(post({ channel: 'C0123456789', text: 'x' })).rejects.toSatisfy(
      isPermanentDeliveryError,
    );
    nextReply = {
      status: 429,
      body: { ok: false, error: 'ratelimited' },
      headers: { 'retry-after': '7' },
    };
    await expect(post({ channel: 'C0123456789', text: 'x' })).rejects.toMatchObject({
      code: 'OUTBOX_RETRYABLE_DELIVERY',
      retryAfterMs: 7000,
    });
    nextReply = { status: 200, body: { ok: false, error: 'fatal_error' } };
    await expect(post({ channel: 'C0123456789', text: 'x' })).rejects.toSatisfy(
      isRetryableDeliveryError,
    );
  });
});
