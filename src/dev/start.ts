/**
 * `npm start`: the local stack on embedded defaults. Starts PostgreSQL (data kept between runs
 * under the OS temp dir) unless DATABASE_URL names a server, migrates it, starts the local Neon
 * proxy, and prints how to connect. Ctrl-C stops everything and exits 0.
 */
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { pgExecutor } from '../drivers/node-pg.js';
import { migrate } from '../store/migrate.js';
import { type EmbeddedPostgres, startEmbeddedPostgres } from './embedded-postgres.js';
import { type NeonProxy, startNeonProxy } from './neon-proxy.js';

/** Fixed default ports, so the printed DATABASE_URL stays the same from one run to the next. */
const DEFAULT_POSTGRES_PORT = 54329;
const DEFAULT_NEON_PROXY_PORT = 54330;

async function main(): Promise<void> {
  const stack: { name: string; stop: () => Promise<void> }[] = [];
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const part of stack.reverse()) {
      await part.stop().catch((error: unknown) => console.error(`stopping ${part.name}:`, error));
    }
    process.exit(code);
  };
  process.on('SIGINT', () => {
    if (stopping) {
      console.error('\nforced exit');
      process.exit(130);
    }
    console.log('\nstopping (Ctrl-C again to force)...');
    void stop(0);
  });
  process.on('SIGTERM', () => void stop(0));

  try {
    let databaseUrl = process.env.DATABASE_URL;
    if (!databaseUrl) {
      const server: EmbeddedPostgres = await startEmbeddedPostgres({
        dataDir: devDataDir(),
        port: Number(process.env.OUTBOX_PG_PORT ?? DEFAULT_POSTGRES_PORT),
        persistent: true,
      });
      stack.push({ name: 'PostgreSQL', stop: server.stop });
      databaseUrl = server.url;
      console.log(`PostgreSQL ${server.version} (embedded, data in ${devDataDir()})`);
    }
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
    stack.push({ name: 'database pool', stop: () => pool.end() });
    const migration = await migrate(pgExecutor(pool));
    console.log(
      `schema "${migration.schema}" at version ${migration.version}` +
        (migration.applied.length ? ` (applied ${migration.applied.join(', ')})` : ''),
    );

    const { hostname, port } = new URL(databaseUrl);
    const proxy: NeonProxy = await startNeonProxy({
      postgres: { host: hostname, port: Number(port || 5432) },
      port: Number(process.env.OUTBOX_NEON_PROXY_PORT ?? DEFAULT_NEON_PROXY_PORT),
    });
    stack.push({ name: 'Neon proxy', stop: () => proxy.close() });

    console.log(`
outbox-relay local stack is running.

  DATABASE_URL=${databaseUrl}

  Neon driver (@neondatabase/serverless) through the local proxy at ${proxy.url}:
    import { neonConfig } from '@neondatabase/serverless';
    import { applyNeonLocalConfig } from 'outbox-relay/dev';
    applyNeonLocalConfig(neonConfig, { port: ${proxy.port} });
  which sets:
    neonConfig.wsProxy = (host, port) => '127.0.0.1:${proxy.port}/v2?address=' + host + ':' + port;
    neonConfig.fetchEndpoint = () => 'http://127.0.0.1:${proxy.port}/sql';
    neonConfig.useSecureWebSocket = false;
    neonConfig.pipelineConnect = false;
    neonConfig.pipelineTLS = false;
    neonConfig.forceDisablePgSSL = true;

Press Ctrl-C to stop.`);
  } catch (error) {
    console.error('npm start failed:', error instanceof Error ? error.message : error);
    await stop(1);
  }
}

/** One data directory per checkout, so two clones do not share a database by accident. */
function devDataDir(): string {
  const checkout = createHash('sha256').update(process.cwd()).digest('hex').slice(0, 12);
  return join(tmpdir(), `outbox-relay-dev-${checkout}`);
}

await main();
