/**
 * A webhook endpoint on loopback for drain tests: records every request and answers 204, or
 * holds its answer until the test releases it (to catch a drain mid-send); and a webhook sender
 * allowed to reach only such an endpoint.
 */
import type { ServerResponse } from 'node:http';
import type { Sender } from '../../src/core/sender.js';
import { webhookSender } from '../../src/senders/webhook/webhook-sender.js';
import { generateWebhookSecret } from '../../src/senders/webhook/webhook-signature.js';
import { type ReceivedRequest, startLoopbackServer } from './loopback-http.js';

export interface WebhookReceiver {
  port: number;
  url: string;
  received: ReceivedRequest[];
  /** Hold every answer from now on until `release()`. */
  hold(): void;
  /** Answer every held request (and later ones) with 204. */
  release(): void;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  let holding = false;
  const held: ServerResponse[] = [];
  const server = await startLoopbackServer((_request, response) => {
    if (holding) held.push(response);
    else response.writeHead(204).end();
  });
  return {
    port: server.port,
    url: server.url,
    received: server.requests,
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      for (const response of held.splice(0)) response.writeHead(204).end();
    },
    close: () => server.close(),
  };
}

/**
 * A webhook sender that may reach only the loopback receiver at `127.0.0.1:<port>`:
 * `development`, because production sends https only and the receiver speaks plain http;
 * `allowHosts` names that one host and port, because loopback is refused in every environment
 * unless allow-listed, and no other local port should be reachable; `resolveHost: false`,
 * because the host is a literal address with no name to resolve. Pass `secret` when the test
 * verifies signatures, `userAgent` to tell senders apart at the receiver.
 */
export function loopbackWebhookSender(
  port: number,
  { secret = generateWebhookSecret(), userAgent }: { secret?: string; userAgent?: string } = {},
): Sender {
  return webhookSender({
    secret,
    environment: 'development',
    allowHosts: [`127.0.0.1:${port}`],
    resolveHost: false,
    userAgent,
  });
}
