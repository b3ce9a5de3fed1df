/**
 * Fails when a PostgreSQL started by the test harness is still running: the suite promises to
 * stop everything it starts, and a leftover server would hold a port and a temp directory.
 */
import { readdirSync, readFileSync } from 'node:fs';

const MARKER = 'outbox-relay-test-pg-';
const strays: string[] = [];
for (const entry of readdirSync('/proc', { withFileTypes: true })) {
  if (!entry.isDirectory() || !/^\d+$/.test(entry.name)) continue;
  try {
    const commandLine = readFileSync(`/proc/${entry.name}/cmdline`, 'utf8').replaceAll('\0', ' ');
    if (commandLine.includes(MARKER)) strays.push(`${entry.name}: ${commandLine.trim()}`);
  } catch {
    // The process ended while we looked.
  }
}
if (strays.length > 0) {
  console.error(`test PostgreSQL still running after the suite:\n${strays.join('\n')}`);
  process.exit(1);
}
console.log('no test PostgreSQL left running');
