import { graphileWorkerSystem } from './graphile-worker.js';
import { outboxRelaySystem } from './outbox-relay.js';
import { pgBossSystem } from './pg-boss.js';
import { sqlFloorSystem } from './sql-floor.js';
import type { QueueSystem, SystemId } from './types.js';

/** Every system the bench compares, in table column order. */
export const SYSTEMS: Readonly<Record<SystemId, QueueSystem>> = {
  'outbox-relay': outboxRelaySystem,
  'pg-boss': pgBossSystem,
  'graphile-worker': graphileWorkerSystem,
  'sql-floor': sqlFloorSystem,
};

export function systemById(id: string): QueueSystem {
  const system = (SYSTEMS as Record<string, QueueSystem | undefined>)[id];
  if (!system) throw new Error(`unknown system "${id}"; known: ${Object.keys(SYSTEMS).join(', ')}`);
  return system;
}
