import { defineConfig } from 'vitest/config';

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
    include: ['test/reliability/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 240_000,
    hookTimeout: 180_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default', './test/reliability/support/summary-reporter.ts'],
  },
});
