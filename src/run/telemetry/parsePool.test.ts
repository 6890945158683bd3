import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { collectGarbage, settlesBelow } from '../../../test/support/collectGarbage.ts';
import { fixturePath } from '../../../test/support/fixtures.ts';
import { ParsePool } from './parsePool.ts';

/** Writes ~20 MB of gpu_util lines (more than two of a read's 8 MiB chunks) as an hour file in `dir`; returns its path. */
function writeBigHour(dir: string): string {
  const lines: string[] = [];
  for (let i = 0; i < 240_000; i++) lines.push(`{"ts":${1796587200 + Math.floor(i / 64)}.25,"node":"10.0.0.${1 + ((i >> 3) & 7)}","gpu":${i & 7},"util":${i % 100},"mem_mb":1900,"power_w":96}`);
  const path = join(dir, '20261206_20.jsonl');
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

test('a parse thread that went away fails its job and is handed no other, so no reader waits for it forever', async () => {
  const pool = new ParsePool(2);
  try {
    assert.equal(pool.waitReady(), 2);
    const dir = fixturePath('miles-demo', 'run', 'dashboard', 'gpu_util');
    const path = `${dir}/${readdirSync(dir).filter((n) => n.endsWith('.jsonl'))[0]}`;
    const slot = pool.idle();
    pool.submit(slot, { stream: 'gpu_util', path, offset: 0, view: null, rowsHint: 100 });
    const worker = (pool as unknown as { slots: { worker: Worker }[] }).slots[slot]!.worker;
    const exited = once(worker, 'exit');
    await worker.terminate();
    await exited;
    assert.notEqual(pool.poll(slot), null, 'its job is done or failed, never still working');
    assert.notEqual(pool.idle(), slot);
    assert.equal(pool.size, 1);
  } finally {
    pool.close();
  }
});

test('a parse thread holds none of the bytes it read once its job is answered', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rlsight-parse-memory-'));
  const pool = new ParsePool(1);
  try {
    // ~20 MB of an hour, more than one read's chunk: what a window read leaves behind is easy to see
    const path = writeBigHour(dir);
    assert.equal(pool.waitReady(), 1);
    const held = (): number => {
      const bytes = pool.threadBufferBytes(pool.idle());
      assert.ok(bytes !== null);
      return bytes;
    };
    collectGarbage();
    const before = held();
    for (const view of ['10.0.0.1:0', null]) {
      const slot = pool.idle();
      pool.submit(slot, { stream: 'gpu_util', path, offset: 0, view, rowsHint: 1000 });
      assert.notEqual(pool.wait(slot), 'failed');
      // (the answer's columns moved to this thread are counted by the one that made them until they are collected here)
      const kept = await settlesBelow(() => held() - before, 2 << 20);
      assert.ok(kept < 2 << 20, `after a ${view === null ? 'whole' : 'view'} read the thread still holds ${kept} bytes of buffers`);
    }
  } finally {
    pool.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a thread's warm-up parse waits while requests are in flight, and goes on once a request's read waits for its thread; a request's own read does not wait", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rlsight-parse-pause-'));
  const cacheDir = mkdtempSync(join(tmpdir(), 'rlsight-parse-pause-cache-'));
  const inFlight = new Int32Array(new SharedArrayBuffer(4));
  const pool = new ParsePool(1, inFlight);
  try {
    const lines: string[] = [];
    for (let i = 0; i < 2_000; i++) lines.push(`{"ts":${1796587200 + (i >> 6)}.25,"node":"10.0.0.1","gpu":${i & 7},"util":1,"mem_mb":1900,"power_w":96}`);
    const path = join(dir, '20261206_20.jsonl');
    writeFileSync(path, lines.join('\n') + '\n');
    assert.equal(pool.waitReady(), 1);
    Atomics.store(inFlight, 0, 1);
    // a request's read is answered while the count says a request is in flight
    const own = pool.idle();
    pool.submit(own, { stream: 'gpu_util', path, offset: 0, view: null, rowsHint: 2_000 });
    assert.notEqual(pool.wait(own, 10_000), 'failed');
    const slot = pool.idle();
    pool.submit(slot, { stream: 'gpu_util', path, offset: 0, view: null, rowsHint: 2_000, persist: { cacheDir, dashboardDir: dir, key: '20261206_20', ino: 1 } });
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(pool.poll(slot), null, 'the warm-up parse is still waiting');
    // a request's read that waits for a thread (every one busy) has the paused parse go on, though requests are in flight
    pool.waitingForThread(true);
    // (well within the 5 s a pause lasts at most)
    const r = pool.wait(slot, 2_000);
    assert.ok(r !== 'failed' && r.persisted === true);
    pool.waitingForThread(false);
  } finally {
    pool.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(cacheDir, { recursive: true, force: true });
  }
});

test('a warm-up parse pauses for requests at most its budget in all, not at every chunk', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rlsight-parse-budget-'));
  const cacheDir = mkdtempSync(join(tmpdir(), 'rlsight-parse-budget-cache-'));
  const inFlight = new Int32Array(new SharedArrayBuffer(4));
  const pool = new ParsePool(1, inFlight);
  try {
    // three of a read's chunks
    const path = writeBigHour(dir);
    assert.equal(pool.waitReady(), 1);
    Atomics.store(inFlight, 0, 1);
    const slot = pool.idle();
    pool.submit(slot, { stream: 'gpu_util', path, offset: 0, view: null, rowsHint: 240_000, persist: { cacheDir, dashboardDir: dir, key: '20261206_20', ino: 1 }, pauseBudgetMs: 300 });
    const r = pool.wait(slot, 20_000);
    assert.ok(r !== 'failed' && r.persisted === true);
    assert.ok(r.pausedMs !== undefined && r.pausedMs >= 280 && r.pausedMs < 600, `paused ${r.pausedMs} ms with a budget of 300 over three chunks`);
  } finally {
    Atomics.store(inFlight, 0, 0);
    pool.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(cacheDir, { recursive: true, force: true });
  }
});
