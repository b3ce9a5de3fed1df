/**
 * Migrates the outbox schema and the app's own table, over Neon HTTP: run it once before you
 * deploy the Worker or the Lambda, and again after adding a migration (node.ts migrates at start
 * itself). Safe to repeat or to run concurrently.
 *
 *   DATABASE_URL=postgres://... node --import tsx migrate.ts
 */
import { neon, neonConfig } from '@neondatabase/serverless';
import { neonHttpExecutor } from 'outbox-relay';
import { applyNeonLocalProxy } from 'outbox-relay/neon-local';
import { migrateOwnApp } from './app.js';

const proxy = process.env.NEON_LOCAL_PROXY; // development only: the local Neon stand-in
if (proxy) applyNeonLocalProxy(neonConfig, proxy);
await migrateOwnApp(neonHttpExecutor(neon(process.env.DATABASE_URL!)));
console.log('migrated: outbox and shop');
