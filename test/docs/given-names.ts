/**
 * What the documentation's examples take as given: the reader's own connection, outbox, app and
 * environment, each with the type it has in a real program. test/docs/examples.test.ts imports a
 * name from here into an example that uses it without declaring it, so a name an example
 * misspells, or a function that does not exist, is still an error. Add a name only when it is
 * something every reader has (a pool, an env); an example that needs anything else declares it.
 */
import type { NeonQueryFunction } from '@neondatabase/serverless';
import type { Context, Hono } from 'hono';
import type {
  Drainer,
  Outbox,
  PostgresOutboxStore,
  Sender,
  SenderRegistry,
  SqlExecutor,
} from 'outbox-relay';
import type { QueueProducerLike } from 'outbox-relay/cloudflare-queues';
import type { NeonProxy } from 'outbox-relay/dev';
import type { SesSenderConfig } from 'outbox-relay/ses';
import type { WebhookPayload } from 'outbox-relay/webhook';
import type { Pool, PoolClient } from 'pg';

/** node-postgres' pool on your database, and one client checked out of it. */
export declare const pool: Pool;
export declare const client: PoolClient;
/** Neon's HTTP query function: `neon(process.env.DATABASE_URL)`. */
export declare const sql: NeonQueryFunction<false, false>;
/** Any executor on your database (`pgExecutor(pool)`, `neonHttpExecutor(sql)`, ...). */
export declare const db: SqlExecutor;
/** The executor of a transaction you have open (`pgExecutor(client)` after `BEGIN`). */
export declare const tx: SqlExecutor;
/** Your `createOutbox(...)`, its store, and the senders you drain it with. */
export declare const outbox: Outbox;
export declare const store: PostgresOutboxStore;
export declare const senders: SenderRegistry;
/** Your own email sender (`sesSender(config)` or one of yours) and its SES config. */
export declare const sendEmail: Sender;
export declare const config: SesSenderConfig;
/** A drain built once for your app: `createDrainer({ store, senders })`. */
export declare const drain: Drainer;
/** Your Hono app. */
export declare const app: Hono;
/**
 * A Worker's environment bindings (on Node and Lambda, `process.env`). An interface, as
 * `wrangler types` writes it: the package's env readers take any object, index signature or not.
 */
export interface Env {
  DATABASE_URL: string;
  ADMIN_TOKEN?: string;
  AWS_REGION: string;
  AWS_ACCESS_KEY_ID: string;
  AWS_SECRET_ACCESS_KEY: string;
  AWS_SESSION_TOKEN?: string;
  NEON_LOCAL_PROXY?: string;
  WEBHOOK_SECRET: string;
  SLACK_TOKEN: string;
  /** A Queue producer binding (`[[queues.producers]]` in wrangler.toml). */
  EVENTS: QueueProducerLike;
}
export declare const env: Env;
/** A recipient's address, as your signup form took it. */
export declare const address: string;
/** What a webhook message carries. */
export declare const payload: WebhookPayload;
/** The message keys a request just wrote (what `outbox.enqueue` returned). */
export declare const keys: string[];
/** The local Neon stand-in (`await startNeonProxy(...)`) and a connection string it serves. */
export declare const proxy: NeonProxy;
export declare const connectionString: string;
/** Your route's domain write and its enqueue, committed; resolves to the message keys. */
export declare function signUp(c: Context): Promise<string[]>;
/** The sender of your own kind that docs/senders.md ("Your own kinds") writes. */
export declare function slackPostSender(token: string): Sender;
