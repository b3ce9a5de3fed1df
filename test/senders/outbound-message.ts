import { randomUUID } from 'node:crypto';
import type { JsonValue } from '../../src/core/message.js';
import type { OutboundMessage } from '../../src/core/sender.js';

/** A message as the drain hands it to a sender: first attempt, fresh key. */
export function outboundMessage(
  kind: string,
  payload: JsonValue,
  overrides: Partial<OutboundMessage> = {},
): OutboundMessage {
  return {
    key: randomUUID(),
    kind,
    payload,
    attempt: 1,
    maxAttempts: 10,
    id: '1',
    orderingKey: null,
    createdAt: new Date(),
    ...overrides,
  };
}

/** A signal that never fires, for sends that are not about timeouts. */
export function openSignal(): AbortSignal {
  return new AbortController().signal;
}
