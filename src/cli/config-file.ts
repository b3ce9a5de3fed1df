/**
 * Finds and loads `outbox.config.ts` (`.mjs`, `.js`) the way drizzle-kit and graphile-worker
 * users expect: `--config PATH`, else the first of those names in the current directory, else
 * none. A file that cannot be loaded, or whose default export is not a config, is a
 * configuration error (exit 3) naming the file and the reason.
 */
import { access } from 'node:fs/promises';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CliError } from './cli-errors.js';
import type { OutboxCliConfig } from './config.js';

/** Looked for in this order in the current directory. */
export const CONFIG_FILE_NAMES = ['outbox.config.ts', 'outbox.config.mjs', 'outbox.config.js'];

export interface LoadedConfig {
  config: OutboxCliConfig;
  /** Absolute path of the file, or undefined when there was none. */
  path: string | undefined;
}

const CONFIG_FIELDS: Readonly<
  Record<keyof OutboxCliConfig, 'string' | 'object' | 'function' | 'boolean'>
> = {
  schema: 'string',
  keepDelivered: 'boolean',
  kinds: 'object',
  destinations: 'object',
  senders: 'object',
  endpointSecret: 'function',
  drain: 'object',
  database: 'object',
};

/**
 * The config for a run: from `explicitPath` (relative to `cwd`; must exist), or the first
 * default name found in `cwd`, or an empty config.
 */
export async function loadConfig(
  cwd: string,
  explicitPath: string | undefined,
): Promise<LoadedConfig> {
  const path =
    explicitPath === undefined ? await findDefaultConfig(cwd) : resolve(cwd, explicitPath);
  if (path === undefined) return { config: {}, path: undefined };
  if (explicitPath !== undefined && !(await exists(path))) {
    throw configError(path, 'no such file');
  }
  const module = await importConfig(path);
  return { config: checkConfig(path, defaultExport(module)), path };
}

async function findDefaultConfig(cwd: string): Promise<string | undefined> {
  for (const name of CONFIG_FILE_NAMES) {
    const path = resolve(cwd, name);
    if (await exists(path)) return path;
  }
  return undefined;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/**
 * `.ts` through tsx's `tsImport` (scoped to this one import, so no global loader is left
 * behind); anything else with plain `import()`.
 */
async function importConfig(path: string): Promise<{ default?: unknown }> {
  const url = pathToFileURL(path).href;
  if (extname(path) === '.ts' || extname(path) === '.mts') {
    let tsImport: (specifier: string, parent: string) => Promise<{ default?: unknown }>;
    try {
      ({ tsImport } = await import('tsx/esm/api'));
    } catch (error) {
      throw configError(
        path,
        'loading a .ts config needs tsx: install tsx or write outbox.config.mjs',
        error,
      );
    }
    return tsImport(url, import.meta.url).catch((error: unknown) => {
      throw configError(path, reasonOf(error), error);
    });
  }
  return (import(url) as Promise<{ default?: unknown }>).catch((error: unknown) => {
    throw configError(path, reasonOf(error), error);
  });
}

/**
 * The config object. A `.ts` or `.js` file outside a `"type": "module"` package loads as
 * CommonJS, where `export default` arrives as `module.exports.default`: unwrap it.
 */
function defaultExport(module: { default?: unknown }): unknown {
  const value = module.default;
  if (typeof value === 'object' && value !== null && 'default' in value) {
    const inner = (value as { default: unknown }).default;
    if (typeof inner === 'object' && inner !== null) return inner;
  }
  return value;
}

/** Checks the default export's shape, so a typo or a missing `export default` says so. */
function checkConfig(path: string, value: unknown): OutboxCliConfig {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw configError(
      path,
      'the default export must be a config object: export default defineConfig({ ... })',
    );
  }
  for (const [field, fieldValue] of Object.entries(value)) {
    const expected = CONFIG_FIELDS[field as keyof OutboxCliConfig];
    if (expected === undefined) {
      throw configError(
        path,
        `unknown field "${field}"; expected ${Object.keys(CONFIG_FIELDS).join(', ')}`,
      );
    }
    if (fieldValue === undefined) continue;
    const okay =
      field === 'senders'
        ? typeof fieldValue === 'function' || isPlainObject(fieldValue)
        : expected === 'object'
          ? isPlainObject(fieldValue)
          : typeof fieldValue === expected;
    if (!okay) {
      const kind =
        field === 'senders'
          ? 'an object or a function'
          : expected === 'object'
            ? 'an object'
            : `a ${expected}`;
      throw configError(path, `${field} must be ${kind}`);
    }
  }
  return value as OutboxCliConfig;
}

function isPlainObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A configuration error (exit 3) that starts with the file's path. */
export function configError(path: string, reason: string, cause?: unknown): CliError {
  return new CliError('CLI_CONFIGURATION', `config ${path}: ${reason}`, { cause });
}
