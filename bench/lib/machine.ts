/** What the numbers were measured on, recorded with every result file. */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg, totalmem } from 'node:os';

const require = createRequire(import.meta.url);

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  ramGiB: number;
  /** 1-minute load average when the run started: a busy machine reads high. */
  loadAverageAtStart: number;
  /** The same when the run ended; filled in by run.ts. */
  loadAverageAtEnd?: number;
  platform: string;
  node: string;
}

/** The 1-minute load average, two decimals. */
export function loadAverage(): number {
  return Math.round((loadavg()[0] ?? 0) * 100) / 100;
}

export function machineInfo(): MachineInfo {
  const cpuList = cpus();
  return {
    cpuModel: cpuList[0]?.model.trim() ?? 'unknown',
    cores: cpuList.length,
    ramGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    loadAverageAtStart: loadAverage(),
    platform: `${process.platform} ${process.arch}`,
    node: process.version,
  };
}

/** The installed version of a dependency, from its own package.json. */
export function packageVersion(name: string): string {
  const manifest = require(`${name}/package.json`) as { version: string };
  return manifest.version;
}

/** This package's version. */
export function ownVersion(): string {
  const url = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
}
