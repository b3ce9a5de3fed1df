/**
 * An app that writes through its ORM, against the installed package and the ORMs' own types:
 * each ORM subpath takes that ORM's transaction (and Drizzle's Neon HTTP `db.batch`) with no
 * cast. Type-checked (strict, nodenext and bundler resolution) in test/package/consumer.test.ts;
 * never run.
 */
import { Pool as NeonPool, neon } from '@neondatabase/serverless';
import { drizzle as drizzleNeonHttp } from 'drizzle-orm/neon-http';
import { drizzle as drizzleNeonWs } from 'drizzle-orm/neon-serverless';
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres';
import { pgTable, text } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import { Kysely, PostgresDialect } from 'kysely';
import { type BatchSqlExecutor, createOutbox, drainOnce, type SqlExecutor } from 'outbox-relay';
import { drizzleExecutor, drizzleQuery } from 'outbox-relay/drizzle';
import { kyselyExecutor } from 'outbox-relay/kysely';
import { postgresJsExecutor } from 'outbox-relay/postgres-js';
import pg from 'pg';
import postgres from 'postgres';

const outbox = createOutbox();
const url = process.env.DATABASE_URL ?? '';
const orders = pgTable('orders', { id: text().primaryKey() });
const payload = { url: 'https://example.com/hook', body: { order: 'order-7' } };

for (const db of [
  drizzleNodePg({ client: new pg.Pool({ connectionString: url }) }),
  drizzleNeonWs({ client: new NeonPool({ connectionString: url }) }),
]) {
  const keys: string[] = await db.transaction(async (tx) => {
    await tx.insert(orders).values({ id: 'order-7' });
    return outbox.enqueue(drizzleExecutor(tx), { kind: 'webhook', payload });
  });
  console.log(keys);
}
const overPostgresJs = drizzlePostgresJs({ client: postgres(url) });
await overPostgresJs.transaction((tx) =>
  outbox.enqueue(drizzleExecutor(tx), { kind: 'webhook', payload }),
);

const overHttp = drizzleNeonHttp({ client: neon(url) });
const write = outbox.enqueueStatement({ kind: 'webhook', payload });
const [, enqueued] = await overHttp.batch([
  overHttp.insert(orders).values({ id: 'order-8' }),
  drizzleQuery(overHttp, write.statement),
]);
console.log(write.keysFromRows(enqueued.rows));

const kysely = new Kysely<{ orders: { id: string } }>({
  dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url }) }),
});
await kysely.transaction().execute(async (trx) => {
  await trx.insertInto('orders').values({ id: 'order-9' }).execute();
  const executor: SqlExecutor = kyselyExecutor(trx);
  await outbox.enqueue(executor, { kind: 'webhook', payload });
});

const sql = postgres(url);
await sql.begin((tx) => outbox.enqueue(postgresJsExecutor(tx), { kind: 'webhook', payload }));
const drains: BatchSqlExecutor = postgresJsExecutor(sql);
await outbox.migrate(drains);
await drainOnce({ store: outbox.store(drains), senders: {} });
