/**
 * The reference service on AWS Lambda (Node.js), bundled by scripts/build-lambda.ts and
 * deployed by serverless.yml; docs/deploy.md walks through it.
 *
 * - `httpHandler`: API Gateway HTTP API (payload 2.0) or a function URL, to the app.
 * - `scheduledHandler`: EventBridge every minute, the library's Lambda kit: one bounded drain
 *   that ends before the invocation's own timeout, and at minute 30 of each hour a purge.
 *
 * The service is built once per sandbox and reused while it stays warm. That is safe because
 * nothing in it holds a connection: the database is Neon's HTTP driver, the SES and SQS clients
 * send one request per call, and the app keeps no per-request state.
 */
import { Hono } from 'hono';
import {
  type APIGatewayProxyResult,
  handle,
  type LambdaContext,
  type LambdaEvent,
} from 'hono/aws-lambda';
import {
  awaitBackgroundWork,
  lambdaScheduledHandler,
  nodeHostResolver,
} from 'outbox-relay/aws-lambda';
import { sqsSenderFromEnv } from 'outbox-relay/sqs';
import {
  misconfiguredResponse,
  type ReferenceService,
  referenceApp,
  referenceServiceFromEnv,
  serviceRouter,
  warnSkippedKinds,
} from './service.js';

let service: ReferenceService | undefined;
let http: ReturnType<typeof handle> | undefined;

/** Built at the first invocation, from `process.env`; a failed build is tried again next time. */
function warmService(): ReferenceService {
  service ??= referenceServiceFromEnv(process.env, {
    resolveHost: nodeHostResolver,
    logFields: { runtime: 'aws-lambda' },
    // OUTBOX_SQS_QUEUE_URL set: orders write an `order.placed` event for that queue.
    orderEvents: sqsSenderFromEnv(process.env),
  });
  return service;
}

/**
 * The app behind API Gateway. The after-commit kick finishes before the handler returns
 * (`awaitBackgroundWork`): Lambda freezes the sandbox as soon as the handler returns.
 * `OUTBOX_KICK=off` leaves delivery to the schedule instead.
 */
export async function httpHandler(
  event: LambdaEvent,
  context?: LambdaContext,
): Promise<APIGatewayProxyResult> {
  if (http === undefined) {
    let app: Hono;
    try {
      const built = warmService();
      const inner = awaitBackgroundWork(referenceApp(built));
      app = serviceRouter(built, async (request, c) => inner.fetch(request, c.env));
    } catch (error) {
      // Answer in API Gateway's shape, like any other response.
      const misconfigured = new Hono();
      misconfigured.all('*', () => misconfiguredResponse(error, { runtime: 'aws-lambda' }));
      return handle(misconfigured)(event);
    }
    http = handle(app);
  }
  return http(event, context);
}

/** One bounded drain per EventBridge event, then (at minute 30) a purge. */
export const scheduledHandler = lambdaScheduledHandler(() => {
  const built = warmService();
  warnSkippedKinds(built);
  return built.drainer;
});
