/**
 * A throwaway project that installs outbox-relay the way a user does: from the tarball
 * `npm pack` makes, with a real `npm install`, and nothing from this repository on its
 * resolution path. test/package/consumer.test.ts drives it.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repo = resolve(fileURLToPath(new URL('../..', import.meta.url)));

export interface Ran {
  stdout: string;
  stderr: string;
}

/** Runs a command to completion; a non-zero exit throws with its whole output. */
export function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv = npmFreeEnv(),
): Promise<Ran> {
  return new Promise((done, fail) => {
    execFile(command, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) {
        fail(
          new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${stdout}\n${stderr}`, {
            cause: error,
          }),
        );
      } else {
        done({ stdout, stderr });
      }
    });
  });
}

/**
 * The environment without what an enclosing `npm test` sets for its own package
 * (npm_package_*, npm_config_local_prefix and the like), which would point a nested npm back
 * at this repository. Where the cache and registry are lives in npmrc files, which the nested
 * npm reads again; the three that may come from the environment alone are kept.
 */
export function npmFreeEnv(): NodeJS.ProcessEnv {
  const kept = new Set(['npm_config_cache', 'npm_config_registry', 'npm_config_userconfig']);
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('npm_') || kept.has(name)),
  );
}

/**
 * `name@version` as this checkout's lock installed it: the consumer asks for the same
 * versions, so `--prefer-offline` finds them in the npm cache `npm ci` just filled.
 */
export async function lockedSpec(name: string): Promise<string> {
  const manifest = join(repo, 'node_modules', name, 'package.json');
  const { version } = JSON.parse(await readFile(manifest, 'utf8')) as { version: string };
  return `${name}@${version}`;
}

/** A bin of one of this checkout's devDependencies, run with the current Node. */
export async function devBin(name: string, bin: string): Promise<string> {
  const manifest = join(repo, 'node_modules', name, 'package.json');
  const { bin: bins } = JSON.parse(await readFile(manifest, 'utf8')) as {
    bin: Record<string, string>;
  };
  const path = bins[bin];
  if (path === undefined) throw new Error(`${name} has no bin named ${bin}`);
  return join(dirname(manifest), path);
}

/** `npm install` into `project`, preferring the cache; no install scripts run. */
export function npmInstall(project: string, specs: readonly string[], extra: string[] = []) {
  return run(
    'npm',
    [
      'install',
      '--prefer-offline',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      ...extra,
      ...specs,
    ],
    project,
  );
}
