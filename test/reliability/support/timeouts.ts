/**
 * How long the two longest scenarios (kill-points.test.ts, and overlap.test.ts' 20,000 messages)
 * may run: about 90 s each alone on 2 cores, but 197 to 233 s, and once past the suite's 240 s,
 * with two other suites running beside them. A guard against a hang, not a pace.
 */
export const LONG_SCENARIO_TIMEOUT_MS = 480_000;
