// Local development pieces: not for production. Import from 'outbox-relay/dev'.

export {
  type EmbeddedPostgres,
  type EmbeddedPostgresOptions,
  startEmbeddedPostgres,
} from './embedded-postgres.js';
export { type LocalSes, localSesEnv, startLocalSes } from './local-ses.js';
export { type LocalSqs, localSqsEnv, startLocalSqs } from './local-sqs.js';
export { applyNeonLocalProxy, type NeonLocalTarget } from './neon-local-config.js';
export {
  applyNeonLocalConfig,
  type NeonLocalConfig,
  type NeonProxy,
  type NeonProxyOptions,
  neonLocalConfig,
  type SimulatedConnectFailure,
  startNeonProxy,
} from './neon-proxy.js';
