/**
 * Bundles the reference service's AWS Lambda handlers (examples/reference-service/lambda.ts) with esbuild, one ES module per
 * function with every dependency inside it (the versions package-lock.json pins, not whatever
 * SDK the Lambda runtime happens to carry), and zips each for `package.artifact` in
 * serverless.yml:
 *
 *   npm run build:lambda                       # dist/lambda/{http,drain}.mjs and .zip
 *   npm run build:lambda -- out/dir
 *
 * Handlers: `http.httpHandler` and `drain.scheduledHandler` (file name, then export).
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { crc32, deflateRawSync } from 'node:zlib';
import { build } from 'esbuild';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));

/** Each function's bundle: the one export its handler names, and nothing the other needs. */
export const LAMBDA_FUNCTIONS = {
  http: 'httpHandler',
  drain: 'scheduledHandler',
} as const;

export type LambdaFunctionName = keyof typeof LAMBDA_FUNCTIONS;

export interface LambdaBundle {
  name: string;
  /** The `.mjs` file; import it to call the handler as Lambda would. */
  path: string;
  /** The zip holding it as `<name>.mjs`, for `package.artifact`. */
  zipPath: string;
  /** `<name>.<export>`, the `handler` setting. */
  handler: string;
  bytes: number;
  zipBytes: number;
}

/**
 * CommonJS packages in the bundle (the AWS SDK's dependencies among them) call `require` for
 * Node built-ins; an ES module has no `require`, so the bundle makes one.
 */
const REQUIRE_SHIM =
  "import { createRequire as __outboxCreateRequire } from 'node:module';\n" +
  'const require = __outboxCreateRequire(import.meta.url);';

/** The reference service's handlers module, which serverless.yml deploys. */
const REFERENCE_ENTRY = join(root, 'examples', 'reference-service', 'lambda.ts');

export async function buildLambda(
  outdir = join(root, 'dist', 'lambda'),
  entry = REFERENCE_ENTRY,
  functions: Readonly<Record<string, string>> = LAMBDA_FUNCTIONS,
): Promise<LambdaBundle[]> {
  await mkdir(outdir, { recursive: true });
  const bundles: LambdaBundle[] = [];
  for (const [name, exported] of Object.entries(functions)) {
    const path = join(outdir, `${name}.mjs`);
    await build({
      stdin: {
        contents: `export { ${exported} } from ${JSON.stringify(entry)};`,
        resolveDir: root,
        sourcefile: `${name}-entry.ts`,
        loader: 'ts',
      },
      outfile: path,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      banner: { js: REQUIRE_SHIM },
      // Stack traces in CloudWatch name our functions; the size saved is not worth losing that.
      minify: false,
      legalComments: 'none',
      logLevel: 'warning',
    });
    const zipPath = join(outdir, `${name}.zip`);
    await writeFile(zipPath, zipOneFile(`${name}.mjs`, await readFile(path)));
    bundles.push({
      name,
      path,
      zipPath,
      handler: `${name}.${exported}`,
      bytes: (await stat(path)).size,
      zipBytes: (await stat(zipPath)).size,
    });
  }
  return bundles;
}

/**
 * A zip archive of one deflated file: what Lambda needs, without a zip dependency. Local file
 * header, data, central directory header, end of central directory (APPNOTE.TXT 4.3).
 */
function zipOneFile(name: string, data: Buffer): Buffer {
  const fileName = Buffer.from(name, 'utf8');
  const compressed = deflateRawSync(data, { level: 9 });
  const checksum = crc32(data);
  // 1980-01-01 00:00: fixed, so the same input gives the same zip (and the same deploy hash).
  const dosTime = 0;
  const dosDate = (0 << 9) | (1 << 5) | 1;
  // Unix mode rw-r--r-- in the external attributes, so the runtime can read the file.
  const externalAttributes = (0o100644 << 16) >>> 0;

  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4); // version needed: 2.0 (deflate)
  local.writeUInt16LE(0x0800, 6); // UTF-8 names
  local.writeUInt16LE(8, 8); // deflate
  local.writeUInt16LE(dosTime, 10);
  local.writeUInt16LE(dosDate, 12);
  local.writeUInt32LE(checksum, 14);
  local.writeUInt32LE(compressed.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(fileName.length, 26);
  local.writeUInt16LE(0, 28);

  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE((3 << 8) | 20, 4); // made by: Unix, 2.0
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(0x0800, 8);
  central.writeUInt16LE(8, 10);
  central.writeUInt16LE(dosTime, 12);
  central.writeUInt16LE(dosDate, 14);
  central.writeUInt32LE(checksum, 16);
  central.writeUInt32LE(compressed.length, 20);
  central.writeUInt32LE(data.length, 24);
  central.writeUInt16LE(fileName.length, 28);
  central.writeUInt32LE(externalAttributes, 38);
  central.writeUInt32LE(0, 42); // offset of the local header

  const centralOffset = local.length + fileName.length + compressed.length;
  const centralSize = central.length + fileName.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(centralOffset, 16);

  return Buffer.concat([local, fileName, compressed, central, fileName, end]);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const outdir = resolve(process.argv[2] ?? join(root, 'dist', 'lambda'));
  for (const bundle of await buildLambda(outdir)) {
    console.log(
      `${relative(process.cwd(), bundle.zipPath)}  handler ${bundle.handler}  ` +
        `${(bundle.bytes / 1024).toFixed(0)} KiB, zipped ${(bundle.zipBytes / 1024).toFixed(0)} KiB`,
    );
  }
}
