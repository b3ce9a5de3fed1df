/**
 * A Debian package a test needs (Chromium for the dashboard's browser tests, Prometheus for
 * promtool), installed on first run when it can be (root, apt-get), with progress printed: a
 * fresh machine's first `npm test` needs nothing but Node and npm. Without root the caller gets
 * the reason instead.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

/** apt-get update plus one package with its libraries: a minute or two, rarely more. */
export const DEBIAN_INSTALL_TIMEOUT_MS = 10 * 60 * 1000;

/** What a test needs: the file that must exist, and the Debian package that holds it. */
export interface DebianNeed {
  path: string;
  packageName: string;
}

/** True when `need.path` is there or could be installed; otherwise why not. */
export async function ensureDebianPackage(need: DebianNeed): Promise<true | string> {
  if (existsSync(need.path)) return true;
  if (process.getuid?.() !== 0) {
    return `${need.path} is missing and only root can install it (apt-get install ${need.packageName})`;
  }
  const started = Date.now();
  console.log(`${need.path} is missing: installing Debian's ${need.packageName} with apt-get`);
  const install = ['install', '-y', '--no-install-recommends', need.packageName];
  for (const args of [['update'], install]) {
    const result = await runApt(need.packageName, args, started);
    if (result !== true) return result;
  }
  if (!existsSync(need.path)) {
    return `apt-get installed ${need.packageName} but ${need.path} is still missing`;
  }
  console.log(`${need.packageName} installed in ${Math.round((Date.now() - started) / 1000)} s`);
  return true;
}

/** Runs apt-get, echoing its milestones and a heartbeat; true, or the reason it failed. */
function runApt(packageName: string, args: string[], started: number): Promise<true | string> {
  const command = `apt-get ${args.join(' ')}`;
  const say = (line: string) => console.log(`[${packageName}] ${line}`);
  say(command);
  return new Promise((resolve) => {
    const child = spawn('apt-get', ['-o', 'DPkg::Lock::Timeout=120', ...args], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const tail: string[] = [];
    let fetched = 0;
    let unpacked = 0;
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > 20) tail.shift();
      if (line.startsWith('Get:')) fetched += 1;
      if (line.startsWith('Unpacking')) unpacked += 1;
      if (/^(Fetched|E:|Err:|W:)/.test(line) || line.startsWith(`Setting up ${packageName}`)) {
        say(line);
      }
    };
    for (const stream of [child.stdout, child.stderr]) {
      let buffered = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        buffered += chunk;
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) onLine(line);
      });
    }
    const heartbeat = setInterval(() => {
      const seconds = Math.round((Date.now() - started) / 1000);
      say(`${command}: ${seconds} s, ${fetched} fetched, ${unpacked} unpacked`);
    }, 15_000);
    child.on('error', (error) => {
      clearInterval(heartbeat);
      resolve(`${command} could not start: ${error.message}`);
    });
    child.on('close', (code) => {
      clearInterval(heartbeat);
      if (code === 0) resolve(true);
      else resolve(`${command} exited with ${code}:\n${tail.join('\n')}`);
    });
  });
}
