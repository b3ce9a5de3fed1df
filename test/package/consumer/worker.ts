/**
 * A Worker as a user writes one against the installed package: the root entry, the Workers
 * kit and Neon's HTTP driver. Bundled by wrangler's dry run in test/package/consumer.test.ts,
 * which checks no Node-only server or driver package reaches the bundle.
 */
import { neon } from '@neondatabase/serverless';
import { createOutbox, neonHttpExecutor } from 'outbox-relay';
import {
  WORKERS_FREE_SUBREQUESTS,
  type WorkerExecutionContext,
  workersScheduledHandler,
} from 'outbox-relay/cloudflare-workers';
import { sesConfigFromEnv, sesSender } from 'outbox-relay/ses';

type Env = {
  DATABASE_URL: string;
  OUTBOX_SES_REGION: string;
  AWS_ACCESS_KEY_ID: string;
  AWS_SECRET_ACCESS_KEY: string;
};

const outbox = createOutbox();

function setup(env: Env) {
  return {
    store: outbox.store(neonHttpExecutor(neon(env.DATABASE_URL))),
    senders: { email: sesSender({ ...sesConfigFromEnv(env), defaultFrom: 'app@example.com' }) },
  };
}

export default {
  async fetch(_request: Request, env: Env, _ctx: WorkerExecutionContext): Promise<Response> {
    return Response.json(
      await outbox.store(neonHttpExecutor(neon(env.DATABASE_URL))).stats(new Date()),
    );
  },
  scheduled: workersScheduledHandler(setup, { subrequestBudget: WORKERS_FREE_SUBREQUESTS }),
};
