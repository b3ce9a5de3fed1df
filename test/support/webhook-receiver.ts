/**
 * A webhook endpoint on loopback for drain tests: records every request and answers 204, or
 * holds its answer until the test releases it (to catch a drain mid-send).
 */
import type { ServerResponse } from 'node:http';
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
