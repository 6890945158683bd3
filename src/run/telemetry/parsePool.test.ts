import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';
import { fixturePath } from '../../../test/support/fixtures.ts';
import { ParsePool } from './parsePool.ts';

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
