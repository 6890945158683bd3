#!/usr/bin/env node
// Runs the bundle in dist/ (made by `npm run build`, which `npm ci` runs) when it is newer than every
// source file; otherwise runs the TypeScript sources through tsx, so an edited checkout never runs stale code.
import { fileURLToPath } from 'node:url';
import { isFresh } from './freshness.mjs';

const bundle = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const sources = fileURLToPath(new URL('../src', import.meta.url));

if (isFresh(bundle, sources)) {
  await import('../dist/cli.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli.ts');
}
