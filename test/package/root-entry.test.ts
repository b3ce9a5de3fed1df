/**
 * The root entry is the small front door: what a user needs to enqueue, drain and type those
 * calls, and nothing that loads a provider SDK, a driver or a Node built-in. Bundled from the
 * sources with esbuild, its inputs are its own modules alone; every SDK lives on the subpath
 * that uses it (`outbox-relay/ses` loads `@aws-sdk/client-ses`, an optional peer).
 * test/package/consumer.test.ts checks the same from the packed tarball.
 */
import { build } from 'esbuild';
import * as root from 'outbox-relay';
import { describe, expect, it } from 'vitest';
import { repo } from './consumer-project.js';

/** The most run-time names the root entry may export (issue 26). */
const MAX_ROOT_EXPORTS = 60;

async function bundleInputs(entry: string, platform: 'neutral' | 'node') {
  const result = await build({
    absWorkingDir: repo,
    entryPoints: [entry],
    bundle: true,
    platform,
    format: 'esm',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const output = Object.values(result.metafile.outputs)[0]!;
  return { inputs: Object.keys(result.metafile.inputs), imports: output.imports };
}

describe('the root entry', () => {
  it('bundles from its own sources alone: no provider SDK, driver package or Node built-in', async () => {
    const { inputs, imports } = await bundleInputs('src/index.ts', 'neutral');
    expect(inputs.filter((input) => input.includes('node_modules/'))).toEqual([]);
    expect(inputs.filter((input) => input.startsWith('src/senders/ses/ses-sender'))).toEqual([]);
    expect(imports.map((entry) => entry.path)).toEqual([]);
  });

  it('leaves the SES SDK to outbox-relay/ses, which does load it', async () => {
    const { inputs } = await bundleInputs('src/senders/ses/index.ts', 'node');
    expect(inputs.some((input) => input.includes('node_modules/@aws-sdk/client-ses/'))).toBe(true);
  });

  it(`exports at most ${MAX_ROOT_EXPORTS} names at run time`, () => {
    expect(Object.keys(root).length).toBeLessThanOrEqual(MAX_ROOT_EXPORTS);
  });
});
