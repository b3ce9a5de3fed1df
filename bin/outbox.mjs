#!/usr/bin/env node
// The `outbox` operator CLI.
//
// Installed (this file sits under a node_modules folder: npm install, npx, a global install),
// it runs the compiled dist/, with no loader and no tsx. In the repository's own checkout it
// runs the TypeScript sources through tsx instead, so the development loop and the CLI tests
// need no build step and never run a stale dist/. The path decides, not the presence of dist/
// or src/: the package ships both, and a checkout may hold an old dist/ from `npm run build`.
import { fileURLToPath } from 'node:url';

const installed = fileURLToPath(import.meta.url)
  .split(/[\\/]/)
  .includes('node_modules');

if (installed) {
  await import('../dist/cli/main.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
