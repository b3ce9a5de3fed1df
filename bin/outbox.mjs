#!/usr/bin/env node
// The `outbox` operator CLI. Runs the TypeScript sources through tsx's loader, so the command
// works straight from a clone after `npm install`, with no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
