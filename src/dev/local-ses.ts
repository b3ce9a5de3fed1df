/**
 * A local SES endpoint (npm `aws-ses-v2-local`) with a web inbox: the real `@aws-sdk/client-ses`
 * sends to it, and what it "delivered" shows at `GET /` (inbox) and `GET /store` (JSON).
 * Development and tests only.
 */
import type { Server } from 'node:http';
import localSes from 'aws-ses-v2-local';

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

export async function startLocalSes(options: { port?: number } = {}): Promise<LocalSes> {
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
