#!/usr/bin/env node
// Runs the bundle in dist/ (made by `npm run build`, which `npm ci` runs), loaded directly: nothing else
// sits between process start and the command. A checkout that was never built runs the TypeScript sources
// through tsx instead. After editing sources, `npm run build:cli` (the tests rebuild a stale bundle).
import { existsSync } from 'node:fs';

if (existsSync(new URL('../dist/cli.js', import.meta.url))) {
  await import('../dist/cli.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli.ts');
}
