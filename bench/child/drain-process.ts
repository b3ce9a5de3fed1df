/**
 * One drain in a process of its own, for the memory scenario: opens the system named by
 * BENCH_SYSTEM on BENCH_DATABASE_URL, drains BENCH_EXPECTED due messages with no-op sends, and
 * prints one JSON line: resident set size before the drain, its sampled peak, and the
 * kernel's maxRSS for the whole process.
 *
 *   BENCH_SYSTEM=outbox-relay BENCH_DATABASE_URL=... BENCH_EXPECTED=50000 \
 *   BENCH_BATCH=100 BENCH_CONCURRENCY=10 node --import tsx bench/child/drain-process.ts
 *
 * With BENCH_SEND_URL, each message is POSTed there (postJson) instead of dropped: the crash
 * scenario counts what arrives and kills this process mid-drain.
 */
import { noopSend, postJson } from '../lib/receiver.js';
import { systemById } from '../systems/index.js';

/** What the child prints; the memory scenario parses it. */
export interface DrainProcessReport {
  system: string;
  delivered: number;
  elapsedMs: number;
  /** RSS after imports and connecting, just before the drain. */
  baselineRssBytes: number;
  /** Highest RSS seen by a 10 ms sampler during the drain. */
  sampledPeakRssBytes: number;
  /** `process.resourceUsage().maxRSS`: the kernel's high-water mark for the whole process. */
  maxRssBytes: number;
  heapUsedPeakBytes: number;
}

const SAMPLE_EVERY_MS = 10;

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`drain-process: ${name} is required`);
  return value;
}

const system = systemById(required('BENCH_SYSTEM'));
const handle = await system.open(required('BENCH_DATABASE_URL'));
const expected = Number(required('BENCH_EXPECTED'));

const baselineRssBytes = process.memoryUsage().rss;
let sampledPeakRssBytes = baselineRssBytes;
let heapUsedPeakBytes = process.memoryUsage().heapUsed;
const sample = () => {
  const usage = process.memoryUsage();
  sampledPeakRssBytes = Math.max(sampledPeakRssBytes, usage.rss);
  heapUsedPeakBytes = Math.max(heapUsedPeakBytes, usage.heapUsed);
};
const sampler = setInterval(sample, SAMPLE_EVERY_MS);
let report: DrainProcessReport;
try {
  const result = await handle.drain({
    expected,
    batchSize: Number(required('BENCH_BATCH')),
    concurrency: Number(required('BENCH_CONCURRENCY')),
    send: process.env.BENCH_SEND_URL ? postJson(process.env.BENCH_SEND_URL) : noopSend,
    timeLimitMs: 10 * 60 * 1000,
  });
  sample();
  report = {
    system: system.id,
    delivered: result.delivered,
    elapsedMs: result.elapsedMs,
    baselineRssBytes,
    sampledPeakRssBytes,
    maxRssBytes: process.resourceUsage().maxRSS * 1024,
    heapUsedPeakBytes,
  };
} finally {
  clearInterval(sampler);
  await handle.close();
}
process.stdout.write(`${JSON.stringify(report)}\n`);
