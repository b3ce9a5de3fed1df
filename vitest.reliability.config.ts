import { defineConfig } from 'vitest/config';

/**
 * Scenarios whose verdict hangs on wall time: they run after every other scenario, one at a
 * time, since on 2 cores a file beside them (8 drains and workerd in overlap.test.ts) moved one
 * run's rate from 1,038 to 351 msg/s within the same test (destination-down), and starved the
 * lease-budget drains until 31 of their 300 ms sends timed out and 2 outcomes came after their
 * 1 s lease (lease-budget, 34.7 s instead of about 12).
 */
const TIMED_SCENARIOS = [
  'test/reliability/lease-budget.test.ts',
  'test/reliability/destination-down.test.ts',
];

/**
 * `npm run test:reliability`: the fault-injection suite (docs/reliability.md). Not part of
 * `npm test`: it kills processes, restarts PostgreSQL and runs wrangler and Lambda bundles, and
 * ends with the summary table its reporter prints and writes to test-artifacts/.
 */
export default defineConfig({
  // As in vitest.config.ts: fixtures import the package by name ('outbox-relay'), which
  // tsconfig.json's `paths` map to sources, so this suite needs no built dist/.
  resolve: { tsconfigPaths: true },
  test: {
    testTimeout: 240_000,
    hookTimeout: 180_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default', './test/reliability/support/summary-reporter.ts'],
    // Each project starts its own PostgreSQL (global setups run one after the other, before
    // any test; with DATABASE_URL the second remakes the same template first).
    projects: [
      {
        extends: true,
        test: {
          name: 'faults',
          sequence: { groupOrder: 0 },
          include: ['test/reliability/**/*.test.ts'],
          exclude: TIMED_SCENARIOS,
          globalSetup: ['test/global-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'timed',
          include: TIMED_SCENARIOS,
          fileParallelism: false,
          globalSetup: ['test/global-setup.ts'],
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
