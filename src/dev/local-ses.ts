/**
 * A local SES endpoint (npm `aws-ses-v2-local`) with a web inbox: the real `@aws-sdk/client-ses`
 * sends to it, and what it "delivered" shows at `GET /` (inbox) and `GET /store` (JSON).
 * Development and tests only.
 *
 * The emulator is an optional peer loaded when `startLocalSes` runs, not when `outbox-relay/dev`
 * is imported: a project that runs only the Neon stand-in or embedded PostgreSQL need not
 * install it.
 */
import type { Server } from 'node:http';

export interface LocalSes {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Environment for `sesConfigFromEnv`: the emulator accepts any credentials. */
export function localSesEnv(ses: { url: string }): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_SES: ses.url,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
  };
}

/**
 * Starts the emulator on 127.0.0.1 (`port` 0 or unset: a free one). Needs `aws-ses-v2-local`
 * installed; without it, rejects with the error naming the package.
 */
export async function startLocalSes(options: { port?: number } = {}): Promise<LocalSes> {
  const { default: localSes } = await import('aws-ses-v2-local');
  // CommonJS default export: bundlers and Node disagree on where it lands.
  type StartLocalSes = (config: { host: string; port: number }) => Promise<Server>;
  const module = localSes as unknown as StartLocalSes & { default?: StartLocalSes };
  const start = module.default ?? module;
  const server = await start({ host: '127.0.0.1', port: options.port ?? 0 });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
