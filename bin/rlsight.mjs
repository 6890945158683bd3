#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 node
// The C allocator's settings (glibc; others ignore them): every thread's buffers in two arenas rather than one
// per thread, and buffers of 128 KiB and more given back to the system as they are freed. Without them a
// server keeps what its parse and encoding threads once used (peak RSS over the 1,024-GPU run's request
// sequence 515-561 MiB instead of 423-498). `node bin/rlsight.mjs` runs without them.
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
