// Local development pieces: not for production. Import from 'outbox-relay/dev'.

export {
  type EmbeddedPostgres,
  type EmbeddedPostgresOptions,
  startEmbeddedPostgres,
} from './embedded-postgres.js';
export { type LocalSes, localSesEnv, startLocalSes } from './local-ses.js';
export {
  applyNeonLocalConfig,
  type NeonLocalConfig,
  type NeonProxy,
  type NeonProxyOptions,
  neonLocalConfig,
  startNeonProxy,
} from './neon-proxy.js';
