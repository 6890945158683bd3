// What `rlsight serve` loads before its first /api/meta answer: the built bundle run directly, and none of
// the heavy libraries only other requests or commands need (they load with their first use).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ensureCliBuilt, RLSIGHT_BIN, servingUrl } from './support/cli.ts';
import { copyFixtureRun, type RunCopy } from './support/fixtures.ts';

/** Packages that must never load on the way to the first /api/meta answer. */
const NOT_ON_START_PATH = [
  'tsx',
  'hyparquet',
  'hyparquet-writer',
  'hyparquet-compressors',
  'flexsearch',
  'diff',
  '@hpcc-js/wasm-zstd',
  '@duckdb/node-api',
  'playwright-core',
  '@huggingface/tokenizers',
  'prom-client',
  'preact',
  'uplot',
  'vite',
  'esbuild',
];

describe('the start path of rlsight serve', () => {
  let run: RunCopy;
  let scratch: string;
  let loaded: string[] = [];
  before(async () => {
    ensureCliBuilt();
    run = copyFixtureRun();
    scratch = mkdtempSync(join(tmpdir(), 'rlsight-start-path-'));
    const log = join(scratch, 'loaded.txt');
    const register = new URL('./support/loadLogRegister.mjs', import.meta.url).href;
    const child = spawn(process.execPath, ['--import', register, RLSIGHT_BIN, 'serve', run.dir, '--port', '0', '--cache-dir', join(scratch, 'cache')], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, RLSIGHT_LOAD_LOG: log },
    });
    try {
      const url = await servingUrl(child);
      const res = await fetch(new URL('/api/meta', url));
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      loaded = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill();
      await exited;
    }
  });
  after(() => {
    run?.dispose();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test('runs the dist bundle, not the sources', () => {
    assert.ok(loaded.some((u) => u.endsWith('/dist/cli.js')), 'dist/cli.js loaded');
    assert.deepEqual(loaded.filter((u) => u.includes('/src/') && u.endsWith('.ts')), []);
  });

  test('loads none of the libraries other requests need', () => {
    const packages = new Set(loaded.map((u) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1]).filter((p): p is string => p !== undefined));
    assert.ok(loaded.length > 10, `${loaded.length} modules recorded`);
    assert.deepEqual(NOT_ON_START_PATH.filter((p) => packages.has(p)), []);
  });

  test("bundles zod's messages in English only (a namespace import lets the bundler leave its other locales out)", () => {
    const bundled = loaded.filter((u) => u.includes('/dist/')).flatMap((u) => [...readFileSync(new URL(u), 'utf8').matchAll(/^\/\/ node_modules\/zod\/v4\/locales\/([\w-]+)\.js$/gm)].map((m) => m[1]));
    assert.deepEqual([...new Set(bundled)], ['en']);
  });
});

test('the installed command starts node with the C allocator settings its `#!` line names', async () => {
  ensureCliBuilt();
  const run = copyFixtureRun();
  const scratch = mkdtempSync(join(tmpdir(), 'rlsight-start-env-'));
  // as a shell runs `rlsight`: the file itself, not `node file`
  const child = spawn(RLSIGHT_BIN, ['serve', run.dir, '--port', '0', '--cache-dir', join(scratch, 'cache')], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    await servingUrl(child);
    const env = new Set(readFileSync(`/proc/${child.pid}/environ`, 'utf8').split('\0'));
    assert.ok(env.has('MALLOC_ARENA_MAX=2'), 'two malloc arenas');
    assert.ok(env.has('MALLOC_MMAP_THRESHOLD_=131072'), 'a fixed mmap threshold');
    assert.match(readFileSync(`/proc/${child.pid}/cmdline`, 'utf8'), /node\0/);
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill();
    await exited;
    run.dispose();
    rmSync(scratch, { recursive: true, force: true });
  }
});
