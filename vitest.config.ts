import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
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
