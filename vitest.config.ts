import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  // The examples, fixtures and tests import the package by name ('outbox-relay/admin'), as a
  // user would. The package's exports map points at the compiled dist/, which the dev loop
  // never builds: tsconfig.json's `paths` map each name to its source file instead, and this
  // makes Vite read them too (tsc, tsx, esbuild and wrangler read tsconfig.json themselves).
  resolve: { tsconfigPaths: true },
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // The fault-injection suite runs on its own: npm run test:reliability.
    exclude: [...configDefaults.exclude, 'test/reliability/**'],
    globalSetup: ['test/global-setup.ts'],
    // Real PostgreSQL, real servers: generous, but a hang still fails instead of blocking CI.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
