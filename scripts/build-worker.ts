/**
 * Bundles the Worker exactly as `wrangler deploy` would (`--dry-run --outdir`, the repo's
 * wrangler.toml, no account or network needed) and reports what Cloudflare would measure:
 *
 *   npm run build:worker                       # dist/worker/
 *   npm run build:worker -- out/dir
 *
 * The size budget test (test/runtime/worker-bundle.test.ts) runs the same build.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));

const METAFILE = 'bundle-meta.json';

export interface WorkerBuild {
  /** The bundled script wrangler would upload. */
  path: string;
  bytes: number;
  /** Gzipped, which is what Cloudflare's Worker size limits count. */
  gzipBytes: number;
  /** Every source file in the bundle, relative to the repository (esbuild's metafile). */
  inputs: string[];
  /** Imports left to the runtime (`node:*` modules under nodejs_compat). */
  runtimeImports: string[];
  /** Bytes in the bundle per package (or per `src/` directory), largest first. */
  byPackage: [string, number][];
}

/** The wrangler CLI of this checkout, run with the current Node (no npx, no global install). */
export function wranglerBin(): string {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve('wrangler/package.json');
  const { bin } = require(manifest) as { bin: Record<string, string> };
  return join(dirname(manifest), bin.wrangler!);
}

/**
 * Environment for a wrangler that must not log in, phone home, or prompt: no metrics, no
 * account token, and no banner (printing it checks npm for a newer wrangler).
 */
export function offlineWranglerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    WRANGLER_SEND_METRICS: 'false',
    WRANGLER_HIDE_BANNER: 'true',
    CI: '1',
  };
  delete env.CLOUDFLARE_API_TOKEN;
  delete env.CLOUDFLARE_ACCOUNT_ID;
  return env;
}

/**
 * Builds the Worker that `config` (a wrangler.toml; default the repository's, which deploys the
 * reference service) describes, into `outdir`.
 */
export async function buildWorker(
  outdir = join(root, 'dist', 'worker'),
  config = join(root, 'wrangler.toml'),
): Promise<WorkerBuild> {
  // wrangler names the bundle after `main`: examples/reference-service/worker.ts -> worker.js.
  const main = /^main\s*=\s*"([^"]+)"/m.exec(await readFile(config, 'utf8'))?.[1];
  if (main === undefined) throw new Error(`${config} has no main = "..." line`);
  const bundleFile = `${basename(main).replace(/\.[cm]?[jt]s$/, '')}.js`;
  const args = [
    wranglerBin(),
    'deploy',
    '--dry-run',
    '--config',
    config,
    '--outdir',
    outdir,
    '--metafile',
    join(outdir, METAFILE),
  ];
  const output = await new Promise<string>((done, fail) => {
    const child = spawn(process.execPath, args, {
      cwd: dirname(config),
      env: offlineWranglerEnv(),
    });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    child.once('error', fail);
    child.once('exit', (code) =>
      code === 0 ? done(text) : fail(new Error(`wrangler deploy --dry-run failed:\n${text}`)),
    );
  });
  const path = join(outdir, bundleFile);
  const script = await readFile(path);
  const metafile = JSON.parse(await readFile(join(outdir, METAFILE), 'utf8')) as {
    outputs: Record<
      string,
      {
        entryPoint?: string;
        inputs: Record<string, { bytesInOutput: number }>;
        imports: { path: string; external?: boolean }[];
      }
    >;
  };
  const bundle = Object.entries(metafile.outputs).find(([name]) => name.endsWith(bundleFile));
  if (!bundle) throw new Error(`no ${bundleFile} in wrangler's metafile:\n${output}`);
  const [, meta] = bundle;
  // The metafile's paths are relative to where wrangler ran: the config's directory.
  const fromRoot = (input: string) =>
    relative(root, resolve(dirname(config), input)).replaceAll('\\', '/');
  const inputs = Object.keys(meta.inputs).map(fromRoot);
  const byPackage = new Map<string, number>();
  for (const [input, { bytesInOutput }] of Object.entries(meta.inputs)) {
    const name =
      /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input)?.[1] ??
      fromRoot(input).split('/').slice(0, 2).join('/');
    byPackage.set(name, (byPackage.get(name) ?? 0) + bytesInOutput);
  }
  return {
    path,
    bytes: script.length,
    gzipBytes: gzipSync(script).length,
    inputs,
    runtimeImports: [...new Set(meta.imports.map((entry) => entry.path))].sort(),
    byPackage: [...byPackage].sort((a, b) => b[1] - a[1]),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const outdir = resolve(process.argv[2] ?? join(root, 'dist', 'worker'));
  const build = await buildWorker(outdir);
  const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;
  console.log(
    `${relative(process.cwd(), build.path)}: ${kib(build.bytes)}, gzipped ${kib(build.gzipBytes)}`,
  );
  console.log(`runtime imports: ${build.runtimeImports.join(', ') || 'none'}`);
  for (const [name, bytes] of build.byPackage.slice(0, 12)) {
    console.log(`  ${kib(bytes).padStart(9)}  ${name}`);
  }
}
