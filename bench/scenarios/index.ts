/**
 * Every scenario, in the order they run and print. A scenario that cannot run yet stays listed
 * with the reason, so the output and the doc show what is still missing.
 */
import { batchSendsScenario } from './batch-sends.js';
import { claimCostScenario } from './claim-cost.js';
import { claimCursorScenario } from './claim-cursor.js';
import { crashDuplicatesScenario } from './crash-duplicates.js';
import { deliveryLatencyScenario } from './delivery-latency.js';
import { destinationHealthScenario } from './destination-health.js';
import { drainMemoryScenario } from './drain-memory.js';
import { enqueueOverheadScenario } from './enqueue-overhead.js';
import { noOpDrainScenario } from './no-op-drain.js';
import { orderingKeysScenario } from './ordering-keys.js';
import { slowReceiverScenario } from './slow-receiver.js';
import { sqlLatencyScenario } from './sql-latency.js';
import { tableHealthScenario } from './table-health.js';
import type { Scenario } from './types.js';

export const SCENARIOS: readonly Scenario[] = [
  noOpDrainScenario,
  slowReceiverScenario,
  claimCostScenario,
  enqueueOverheadScenario,
  deliveryLatencyScenario,
  drainMemoryScenario,
  tableHealthScenario,
  sqlLatencyScenario,
  crashDuplicatesScenario,
  claimCursorScenario,
  orderingKeysScenario,
  destinationHealthScenario,
  batchSendsScenario,
];

/** Whether BENCH_ONLY (already lower-cased) selects this scenario; null selects all. */
export function isSelected(scenario: Scenario, only: ReadonlySet<string> | null): boolean {
  if (only === null) return true;
  return only.has(scenario.id) || (scenario.aliases ?? []).some((alias) => only.has(alias));
}
