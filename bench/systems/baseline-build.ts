/**
 * outbox-relay as another checkout builds it (`BENCH_BASELINE`): its own bench adapter, loaded
 * from that checkout, so its drains run its claim, settle and migrations, beside this build's in
 * one bench process and one PostgreSQL. Measured side by side, a change's cost is read against
 * the same machine at the same moment instead of against a run from another hour.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { QueueSystem } from './types.js';

/** The checkout's outbox-relay system, labelled by its commit, with templates of its own. */
export async function baselineSystem(root: string): Promise<QueueSystem> {
  const adapter = join(resolve(root), 'bench', 'systems', 'outbox-relay.ts');
  if (!existsSync(adapter)) {
    throw new Error(`BENCH_BASELINE=${root}: no bench/systems/outbox-relay.ts there`);
  }
  const loaded = (await import(pathToFileURL(adapter).href)) as {
    outboxRelaySystem?: QueueSystem;
  };
  const system = loaded.outboxRelaySystem;
  if (system === undefined) throw new Error(`${adapter} exports no outboxRelaySystem`);
  const revision = commitOf(root);
  return {
    ...system,
    databaseKey: 'outbox-relay-baseline',
    label: `${system.label} at ${revision} (BENCH_BASELINE)`,
    settings: { ...system.settings, build: `${resolve(root)} at ${revision}` },
  };
}

/** The checkout's commit, or its path when it is not a git work tree (an exported tree). */
function commitOf(root: string): string {
  try {
    return execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return 'an exported tree';
  }
}
